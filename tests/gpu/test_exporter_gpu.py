"""On a real GPU: the exporter's PCIe RX counter grows at the rate a pinned host-to-device copy loop moves
(protocol overhead included), and every GPU series is there.

Run on the GPU machine: ``pytest -m gpu tests/gpu/test_exporter_gpu.py``.
"""

from __future__ import annotations

import time

import pytest
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from test_gpu_source_real import PROTOCOL_OVERHEAD, PinnedCopyLoop, torch_gpu

from xfertop.export.prometheus_exporter import Exporter
from xfertop.sources.gpu.source import GpuSource

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
WINDOW_S = 3.0


def _rx_and_time(exporter: Exporter, source: GpuSource, uuid: str) -> tuple[float, float]:
    """The RX counter of GPU ``uuid`` and the time of the GPU snapshot it was integrated up to."""
    latest = source.latest()
    assert latest is not None
    text = generate_latest(exporter.registry).decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "xfertop_gpu_pcie_rx_bytes_total" and sample.labels["uuid"] == uuid:
                return sample.value, latest.timestamp
    raise AssertionError(f"no xfertop_gpu_pcie_rx_bytes_total for {uuid}")


def _next_snapshot(source: GpuSource, after: float) -> None:
    deadline = time.monotonic() + 10
    while (latest := source.latest()) is None or latest.timestamp <= after:
        assert time.monotonic() < deadline, "no new GPU snapshot within 10 s"
        time.sleep(0.05)


def test_the_rx_counter_grows_at_the_copy_loops_wire_rate() -> None:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    source = GpuSource(interval_s=0.5)
    exporter = Exporter(source, None, None, host_label="gpu-box")
    loop = PinnedCopyLoop("h2d")
    source.start()
    try:
        first = source.wait_for_sample(10.0)
        assert first is not None and first.error is None, first
        uuid = torch_gpu(first.gpus).uuid
        loop.start()
        loop.halt.wait(1.0)  # the loop reaches its steady rate, and the counters see it
        _next_snapshot(source, time.time())
        rx_start, t_start = _rx_and_time(exporter, source, uuid)
        start_s = time.perf_counter()
        loop.halt.wait(WINDOW_S)
        _next_snapshot(source, time.time())
        rx_end, t_end = _rx_and_time(exporter, source, uuid)
        end_s = time.perf_counter()
    finally:
        loop.halt.set()
        loop.join()
        source.stop()
    method = torch_gpu(source.latest().gpus).pcie.method
    overhead = PROTOCOL_OVERHEAD[("auto" if method == "gpm" else "counters", "h2d")]
    expected = loop.payload_bytes_per_s(start_s, end_s) * overhead
    measured = (rx_end - rx_start) / (t_end - t_start)
    assert abs(measured - expected) / expected < 0.10, (method, measured, expected)
