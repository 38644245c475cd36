"""The CUDA backend: copies through torch on one stream per direction, timed with CUDA events."""

from __future__ import annotations

import torch

from xfertop.model.bench import MemoryKind

#: Elements per chunk when writing or checking a pattern (keeps the temporary at 256 MiB of int32).
_CHUNK_ELEMENTS = 64 * 1024 * 1024
#: Host time to enqueue one copy, generously; the spin kernel must outlast enqueueing `count` copies.
_ENQUEUE_S_PER_COPY = 20e-6


class CudaOps:
    name = "cuda"

    def __init__(self) -> None:
        self._streams: dict[tuple[int, int], torch.cuda.Stream] = {}

    def device_count(self) -> int:
        return torch.cuda.device_count()

    def device(self, gpu_index: int) -> torch.device:
        return torch.device("cuda", gpu_index)

    def stream(self, gpu_index: int, slot: int = 0) -> torch.cuda.Stream:
        key = (gpu_index, slot)
        if key not in self._streams:
            self._streams[key] = torch.cuda.Stream(device=gpu_index)
        return self._streams[key]

    def alloc(self, nbytes: int, memory: MemoryKind, gpu_index: int = 0) -> torch.Tensor:
        if memory == "device":
            return torch.empty(nbytes, dtype=torch.uint8, device=self.device(gpu_index))
        return torch.empty(nbytes, dtype=torch.uint8, pin_memory=memory == "pinned")

    def alloc_registered(self, nbytes: int) -> torch.Tensor:
        """Pinned by cudaHostRegister after this thread touched every page (first touch = NUMA placement)."""
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # first touch by this (node-bound) thread, not the intra-op pool
        try:
            host = torch.zeros(nbytes, dtype=torch.uint8)
        finally:
            torch.set_num_threads(threads)
        status = torch.cuda.cudart().cudaHostRegister(host.data_ptr(), nbytes, 0)
        if int(status) != 0:
            raise RuntimeError(f"cudaHostRegister of {nbytes} bytes failed with CUDA error {int(status)}")
        return host

    def unregister(self, host: torch.Tensor) -> None:
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaHostUnregister(host.data_ptr())

    def _words(self, buf: torch.Tensor) -> torch.Tensor:
        return buf[: buf.numel() // 4 * 4].view(torch.int32)

    def fill_pattern(self, buf: torch.Tensor, seed: int) -> None:
        words = self._words(buf)
        for start in range(0, words.numel(), _CHUNK_ELEMENTS):
            chunk = words[start : start + _CHUNK_ELEMENTS]
            torch.arange(start, start + chunk.numel(), dtype=torch.int32, device=buf.device, out=chunk)
            chunk.add_(seed)
        if buf.is_cuda:
            torch.cuda.synchronize(buf.device)

    def clear(self, buf: torch.Tensor) -> None:
        buf.zero_()
        if buf.is_cuda:
            torch.cuda.synchronize(buf.device)

    def verify_pattern(self, buf: torch.Tensor, seed: int) -> bool:
        torch.cuda.synchronize()
        words = self._words(buf)
        for start in range(0, words.numel(), _CHUNK_ELEMENTS):
            chunk = words[start : start + _CHUNK_ELEMENTS]
            expected = torch.arange(start, start + chunk.numel(), dtype=torch.int32, device=buf.device).add_(
                seed
            )
            if not torch.equal(chunk, expected):
                return False
        return True

    def _gpu_of(self, *bufs: torch.Tensor) -> int:
        return next(b.device.index for b in bufs if b.is_cuda)

    def spin_cycles(self, gpu_index: int, seconds: float) -> int:
        clock_khz = getattr(torch.cuda.get_device_properties(gpu_index), "clock_rate", 0) or 2_000_000
        return int(seconds * clock_khz * 1e3)

    def time_copies_s(
        self,
        dst: torch.Tensor,
        src: torch.Tensor,
        count: int,
        *,
        non_blocking: bool,
        pre_block: bool,
        wall_clock: bool = False,
    ) -> float:
        gpu = self._gpu_of(dst, src)
        if wall_clock:
            return self._time_wall_s(dst, src, count, gpu)
        stream = self.stream(gpu)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize(gpu)
        with torch.cuda.stream(stream):
            if pre_block:
                torch.cuda._sleep(self.spin_cycles(gpu, count * _ENQUEUE_S_PER_COPY))
            start.record(stream)
            for _ in range(count):
                dst.copy_(src, non_blocking=non_blocking)
            end.record(stream)
        end.synchronize()
        return start.elapsed_time(end) / 1e3

    def _time_wall_s(self, dst: torch.Tensor, src: torch.Tensor, count: int, gpu: int) -> float:
        """The classic recipe: host clock around blocking copies, synchronised at both ends."""
        import time

        torch.cuda.synchronize(gpu)
        start_ns = time.perf_counter_ns()
        for _ in range(count):
            dst.copy_(src)
        torch.cuda.synchronize(gpu)
        return (time.perf_counter_ns() - start_ns) / 1e9

    def time_bidir_s(
        self, h2d: tuple[torch.Tensor, torch.Tensor], d2h: tuple[torch.Tensor, torch.Tensor], count: int
    ) -> tuple[float, float, float]:
        gpu = self._gpu_of(*h2d)
        up, down = self.stream(gpu, 0), self.stream(gpu, 1)
        start, end_up, end_down = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        torch.cuda.synchronize(gpu)
        with torch.cuda.stream(up):
            torch.cuda._sleep(self.spin_cycles(gpu, 2 * count * _ENQUEUE_S_PER_COPY))
            start.record(up)
        down.wait_event(start)
        for stream, (dst, src), end in ((up, h2d, end_up), (down, d2h, end_down)):
            with torch.cuda.stream(stream):
                for _ in range(count):
                    dst.copy_(src, non_blocking=True)
                end.record(stream)
        torch.cuda.synchronize(gpu)
        up_s, down_s = start.elapsed_time(end_up) / 1e3, start.elapsed_time(end_down) / 1e3
        return max(up_s, down_s), up_s, down_s

    def free_device_bytes(self, gpu_index: int = 0) -> int:
        free_bytes, _total = torch.cuda.mem_get_info(gpu_index)
        return int(free_bytes)


def describe_no_cuda() -> str | None:
    """None when a CUDA GPU is usable, else the one-line reason."""
    if torch.cuda.is_available():
        return None
    if torch.version.cuda:
        return (
            f"no CUDA GPU visible to torch: torch {torch.__version__} (CUDA {torch.version.cuda}) finds no "
            "GPU or driver; check nvidia-smi and CUDA_VISIBLE_DEVICES"
        )
    return (
        f"no CUDA GPU visible to torch: torch {torch.__version__} is a CPU-only build; "
        "install a CUDA build of torch"
    )
