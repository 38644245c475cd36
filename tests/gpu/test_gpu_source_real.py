"""On a real GPU: the GPU source's PCIe rates agree with what a pinned copy loop moves.

Run on the GPU machine: ``XFERTOP_RESULTS_DIR=$OUT pytest -m gpu tests/gpu/test_gpu_source_real.py``.
NVML counts protocol overhead: on the H200 the byte counters read ~1.075-1.09x the payload (GPU-FACTS.md);
GPM (the default on Hopper or newer) counts a little less on RX: ~1.04x (benchmarks/nvml_costs.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from gpu_results import write_result
from xfertop.model.gpu import GpuSnapshot
from xfertop.sources.gpu.source import GpuSource

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

COPY_BYTES = 256 * 2**20
COPIES_PER_SYNC = 4
#: Wire bytes per payload byte, measured on the H200: the byte counters (GPU-FACTS.md), and GPM
#: (diag run of 2026-11-29, docs/gpu-source.md), which counts fewer RX overhead bytes than the counters.
PROTOCOL_OVERHEAD = {
    ("counters", "h2d"): 1.075,
    ("counters", "d2h"): 1.075,
    ("auto", "h2d"): 1.037,
    ("auto", "d2h"): 1.087,
}
METHOD = {"counters": "counter", "auto": "gpm"}
TOLERANCE = 0.05
MEASURE_S = 2.0


class PinnedCopyLoop(threading.Thread):
    """Copies a warmed-up pinned buffer to or from the GPU until stopped, logging (time, bytes done)."""

    def __init__(self, direction: str) -> None:
        super().__init__(name=f"copy-{direction}", daemon=True)
        host = torch.empty(COPY_BYTES, dtype=torch.uint8).pin_memory()
        host.fill_(1)  # first touch of host pages is slow in VMs: not inside the measurement
        device = torch.empty(COPY_BYTES, dtype=torch.uint8, device="cuda")
        self.src, self.dst = (host, device) if direction == "h2d" else (device, host)
        for _ in range(3):
            self.dst.copy_(self.src, non_blocking=True)
        torch.cuda.synchronize()
        self.marks: list[tuple[float, int]] = []
        self.halt = threading.Event()

    def run(self) -> None:
        stream = torch.cuda.Stream()
        moved_bytes = 0
        with torch.cuda.stream(stream):
            while not self.halt.is_set():
                for _ in range(COPIES_PER_SYNC):
                    self.dst.copy_(self.src, non_blocking=True)
                stream.synchronize()
                moved_bytes += COPIES_PER_SYNC * COPY_BYTES
                self.marks.append((time.perf_counter(), moved_bytes))

    def payload_bytes_per_s(self, start_s: float, end_s: float) -> float:
        inside = [mark for mark in self.marks if start_s <= mark[0] <= end_s]
        (t_first, b_first), (t_last, b_last) = inside[0], inside[-1]
        return (b_last - b_first) / (t_last - t_first)


def torch_gpu(state_gpus: tuple[GpuSnapshot, ...]) -> GpuSnapshot:
    """The NVML GPU that torch's cuda:0 is (CUDA_VISIBLE_DEVICES may renumber them)."""
    uuid = getattr(torch.cuda.get_device_properties(0), "uuid", None)
    for gpu in state_gpus:
        if uuid is not None and gpu.uuid.removeprefix("GPU-") == str(uuid):
            return gpu
    return state_gpus[0]


@pytest.fixture
def source() -> Iterator[GpuSource]:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    gpu_source = GpuSource(interval_s=MEASURE_S)
    yield gpu_source
    gpu_source.stop()


@pytest.mark.parametrize("choice", ["auto", "counters"])
@pytest.mark.parametrize("direction", ["h2d", "d2h"])
def test_pcie_rate_matches_the_payload_of_a_pinned_copy_loop(direction: str, choice: str) -> None:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    source = GpuSource(interval_s=MEASURE_S, pcie=choice)
    try:
        measure_against_a_copy_loop(source, direction, choice)
    finally:
        source.stop()


def measure_against_a_copy_loop(source: GpuSource, direction: str, choice: str) -> None:
    loop = PinnedCopyLoop(direction)
    first = source.sample_once()
    assert first.error is None, first.error
    loop.start()
    try:
        loop.halt.wait(0.5)  # let the loop reach its steady rate before the window opens
        source.sample_once()  # opens the measured window
        window_start_s = time.perf_counter()
        cpu_before_s = source.poller.cpu_s if source.poller else 0.0
        loop.halt.wait(MEASURE_S)
        state = source.sample_once()  # closes it
        window_end_s = time.perf_counter()
    finally:
        loop.halt.set()
        loop.join()
    gpu = torch_gpu(state.gpus)
    payload = loop.payload_bytes_per_s(window_start_s, window_end_s)
    wire = gpu.pcie.rx_bytes_per_s if direction == "h2d" else gpu.pcie.tx_bytes_per_s
    window_s = window_end_s - window_start_s
    poller_cpu_s = source.poller.cpu_s - cpu_before_s if source.poller else None
    result = {
        "gpu": gpu.name,
        "driver": state.driver_version,
        "link": f"Gen{gpu.link.gen_current} x{gpu.link.width_current}",
        "direction": direction,
        "method": gpu.pcie.method,
        "coverage": gpu.pcie.coverage,
        "payload_bytes_per_s": payload,
        "rx_bytes_per_s": gpu.pcie.rx_bytes_per_s,
        "tx_bytes_per_s": gpu.pcie.tx_bytes_per_s,
        "wire_over_payload": wire / payload if wire else None,
        "poll_interval_s": source.poller.interval_s if source.poller else None,
        "poller_cpu_share_of_one_core": poller_cpu_s / window_s if poller_cpu_s is not None else None,
    }
    write_result(f"gpu_source_{direction}_{choice}", result)
    if choice == "auto" and gpu.pcie.method == "counter":
        pytest.skip("this GPU has no GPM (older than Hopper): the counters test covers it")
    assert gpu.pcie.method == METHOD[choice], result
    assert gpu.pcie.coverage is not None and gpu.pcie.coverage > 0.95, result
    expected = PROTOCOL_OVERHEAD[choice, direction]
    assert wire is not None and wire / payload == pytest.approx(expected, rel=TOLERANCE), result


def test_real_snapshot_has_the_facts_a_person_needs(source: GpuSource) -> None:
    state = source.sample_once()
    assert state.error is None and state.gpus, state.error
    gpu = torch_gpu(state.gpus)
    write_result("gpu_source_snapshot", {"state": repr(state)})
    assert gpu.name and gpu.uuid.startswith("GPU-") and gpu.bus_id
    assert gpu.mem_total_bytes and gpu.link.gen_max and gpu.link.width_max
    assert state.driver_version and state.cuda_driver_version
    assert gpu.lost_reason is None
