"""The CPU backend: the same operations on plain host memory (memmove), so CI runs the whole protocol.

Its figures are host memcpy rates, not PCIe: reports mark the backend, and checks never judge them
against a PCIe link. "pinned", "pageable" and "device" buffers are all ordinary bytearrays here.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time

from xfertop.model.bench import MemoryKind

_PATTERN_PERIOD = 251


def _pattern(nbytes: int, seed: int) -> bytes:
    period = bytes((i * 7 + seed) % _PATTERN_PERIOD for i in range(_PATTERN_PERIOD))
    return (period * (nbytes // _PATTERN_PERIOD + 1))[:nbytes]


def _address(buf: bytearray) -> int:
    return ctypes.addressof((ctypes.c_char * len(buf)).from_buffer(buf))


class CpuOps:
    name = "cpu"

    def __init__(self, fake_devices: int = 1) -> None:
        self._devices = fake_devices

    def device_count(self) -> int:
        return self._devices

    def alloc(self, nbytes: int, memory: MemoryKind, gpu_index: int = 0) -> bytearray:
        return bytearray(nbytes)

    def fill_pattern(self, buf: bytearray, seed: int) -> None:
        buf[:] = _pattern(len(buf), seed)

    def clear(self, buf: bytearray) -> None:
        ctypes.memset(_address(buf), 0, len(buf))

    def verify_pattern(self, buf: bytearray, seed: int) -> bool:
        return bytes(buf) == _pattern(len(buf), seed)

    def time_copies_s(
        self,
        dst: bytearray,
        src: bytearray,
        count: int,
        *,
        non_blocking: bool,
        pre_block: bool,
        wall_clock: bool = False,
    ) -> float:
        dst_addr, src_addr, nbytes = _address(dst), _address(src), len(src)
        start_ns = time.perf_counter_ns()
        for _ in range(count):
            ctypes.memmove(dst_addr, src_addr, nbytes)
        return (time.perf_counter_ns() - start_ns) / 1e9

    def time_bidir_s(
        self, h2d: tuple[bytearray, bytearray], d2h: tuple[bytearray, bytearray], count: int
    ) -> tuple[float, float, float]:
        elapsed: dict[str, float] = {}

        def run(name: str, dst: bytearray, src: bytearray) -> None:
            elapsed[name] = self.time_copies_s(dst, src, count, non_blocking=True, pre_block=False)

        start_ns = time.perf_counter_ns()
        other = threading.Thread(target=run, args=("d2h", *d2h))
        other.start()
        run("h2d", *h2d)
        other.join()
        return (time.perf_counter_ns() - start_ns) / 1e9, elapsed["h2d"], elapsed["d2h"]

    def free_device_bytes(self, gpu_index: int = 0) -> int:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


class CorruptingCpuOps(CpuOps):
    """A copy engine with a stuck bit: flips the first byte of every copy. For testing verification."""

    def time_copies_s(
        self,
        dst: bytearray,
        src: bytearray,
        count: int,
        *,
        non_blocking: bool,
        pre_block: bool,
        wall_clock: bool = False,
    ) -> float:
        elapsed_s = super().time_copies_s(dst, src, count, non_blocking=non_blocking, pre_block=pre_block)
        dst[0] ^= 0xFF
        return elapsed_s
