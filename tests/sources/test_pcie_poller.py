"""The counter poller replays the H200's recorded counters: the whole-time average, wraps and all."""

from __future__ import annotations

import pytest

from fakes.fake_pynvml import FakeClock, FakeGpu, FakePynvml, RecordedTraffic, SteadyTraffic
from xfertop.sources.gpu.nvml_api import NvmlApi
from xfertop.sources.gpu.pcie_counter import link_wire_bytes_per_s
from xfertop.sources.gpu.pcie_poller import PcieCounterPoller, PolledGpu

GEN5_X16_WIRE = link_wire_bytes_per_s(5, 16)


def make_poller(gpus: list[FakeGpu]) -> tuple[PcieCounterPoller, FakePynvml, FakeClock]:
    clock = FakeClock()
    fake = FakePynvml(gpus, clock=clock, sleep=clock.sleep)
    polled = [PolledGpu(gpu.index, gpu, GEN5_X16_WIRE) for gpu in gpus]
    return PcieCounterPoller(NvmlApi(fake), polled, clock=clock), fake, clock


def run_polls(poller: PcieCounterPoller, clock: FakeClock, until_s: float, start_s: float) -> None:
    while clock() - start_s < until_s:
        poller.poll_once()
        clock.sleep(poller.interval_s)


def test_pinned_h2d_phase_reads_the_recorded_wire_rate_with_full_coverage() -> None:
    traffic = RecordedTraffic()
    poller, _, clock = make_poller([FakeGpu(0, traffic=traffic)])
    h2d_start_s, h2d_end_s = traffic.phase_span_s("h2d")
    start_s = clock()
    run_polls(poller, clock, h2d_start_s + 0.1, start_s)
    poller.take(0)
    run_polls(poller, clock, h2d_end_s - 0.1, start_s)
    rates = poller.take(0)
    # The real trace: 59.2 GB/s on the wire for 54.9 GB/s of payload (protocol overhead ~7.8%).
    assert rates.rx_bytes_per_s == pytest.approx(59.2e9, rel=0.01)
    assert rates.rx_bytes_per_s / traffic.payload_bytes_per_s("h2d") == pytest.approx(1.078, abs=0.01)
    assert rates.tx_bytes_per_s == pytest.approx(5.15e9, rel=0.03)  # completions going back
    assert rates.coverage > 0.97


def test_a_stalled_poller_reports_less_coverage_not_invented_bytes() -> None:
    poller, _, clock = make_poller([FakeGpu(0, traffic=SteadyTraffic(rx_bytes_per_s=50e9))])
    poller.poll_once()
    poller.take(0)
    for _ in range(10):
        clock.sleep(0.02)
        poller.poll_once()
    clock.sleep(0.3)  # the thread was starved for 300 ms: the counter may have wrapped 4 times
    for _ in range(25):
        poller.poll_once()
        clock.sleep(0.02)
    rates = poller.take(0)
    assert rates.rx_bytes_per_s == pytest.approx(50e9, rel=1e-3)
    assert rates.coverage == pytest.approx(1 - 0.3 / rates.wall_s, abs=0.03)


def test_a_driver_reload_mid_window_is_dropped() -> None:
    gpu = FakeGpu(0, traffic=SteadyTraffic(rx_bytes_per_s=10e9))
    poller, _, clock = make_poller([gpu])
    gpu.counter_offsets = (0, 200_000_000)
    for _ in range(10):
        poller.poll_once()
        clock.sleep(0.02)
    gpu.reset_counters(now_s=clock())  # the counter falls from ~2.2e9 to 0: mod 2**32 a ~2 GB jump
    for _ in range(10):
        poller.poll_once()
        clock.sleep(0.02)
    rates = poller.take(0)
    assert rates.rx_bytes_per_s == pytest.approx(10e9, rel=1e-3)
    assert rates.coverage < 0.95


def test_each_gpu_keeps_its_own_counts_and_a_lost_one_stops_being_polled() -> None:
    gpus = [FakeGpu(i, traffic=SteadyTraffic(rx_bytes_per_s=(i + 1) * 1e9)) for i in range(3)]
    poller, fake, clock = make_poller(gpus)
    run_polls(poller, clock, 0.2, clock())
    gpus[1].lost = True
    run_polls(poller, clock, 0.2, clock())
    assert [round(poller.take(i).rx_bytes_per_s / 1e9, 3) for i in (0, 2)] == [1.0, 3.0]
    reads_before = fake.calls.count("nvmlDeviceGetFieldValues")
    poller.poll_once()
    assert fake.calls.count("nvmlDeviceGetFieldValues") == reads_before + 2


def test_the_poll_interval_follows_the_fastest_link() -> None:
    clock = FakeClock()
    fake = FakePynvml([FakeGpu(0), FakeGpu(1)], clock=clock, sleep=clock.sleep)
    gpus = [
        PolledGpu(0, fake.gpus[0], link_wire_bytes_per_s(4, 16)),
        PolledGpu(1, fake.gpus[1], link_wire_bytes_per_s(6, 16)),
    ]
    assert PcieCounterPoller(NvmlApi(fake), gpus, clock=clock).interval_s == pytest.approx(0.0168, abs=1e-4)


def test_the_thread_polls_and_stops() -> None:
    fake = FakePynvml([FakeGpu(0, traffic=SteadyTraffic(rx_bytes_per_s=20e9))])
    gpu = fake.gpus[0]
    poller = PcieCounterPoller(NvmlApi(fake), [PolledGpu(0, gpu, GEN5_X16_WIRE)])
    poller.start()
    try:
        assert poller.wait_for_polls(5, timeout_s=10)
    finally:
        poller.stop()
    assert poller.take(0).rx_bytes_per_s == pytest.approx(20e9, rel=0.01)


def test_the_20ms_sampler_sees_one_window_and_blocks_for_it() -> None:
    """The fallback as the H200 answered: ~59e6 KB/s mid-H2D (GPU-FACTS: 59.4e6), 20 ms per call."""
    traffic = RecordedTraffic()
    clock = FakeClock()
    fake = FakePynvml([FakeGpu(0, traffic=traffic)], clock=clock, sleep=clock.sleep)
    h2d_start_s, h2d_end_s = traffic.phase_span_s("h2d")
    clock.sleep((h2d_start_s + h2d_end_s) / 2)
    before_s = clock()
    rx_kb_per_s = fake.nvmlDeviceGetPcieThroughput(fake.gpus[0], 1)
    assert clock() - before_s == pytest.approx(0.020)
    assert rx_kb_per_s == pytest.approx(59.2e6, rel=0.03)


def test_an_unexpected_failure_is_reported_and_the_thread_carries_on() -> None:
    fake = FakePynvml([FakeGpu(0, traffic=SteadyTraffic(rx_bytes_per_s=20e9))])
    real_read = fake.nvmlDeviceGetFieldValues
    failures = iter([True])

    def flaky_read(gpu: FakeGpu, field_ids: list[int]) -> object:
        if next(failures, False):
            raise RuntimeError("a binding bug")
        return real_read(gpu, field_ids)

    fake.nvmlDeviceGetFieldValues = flaky_read
    poller = PcieCounterPoller(NvmlApi(fake), [PolledGpu(0, fake.gpus[0], GEN5_X16_WIRE)])
    poller.start()
    try:
        assert poller.wait_for_polls(4, timeout_s=10)
    finally:
        poller.stop()
    assert poller.last_error == "PCIe counter poll failed: RuntimeError: a binding bug"
    assert poller.take(0).rx_bytes_per_s == pytest.approx(20e9, rel=0.01)
