"""GPM PCIe rates (Hopper or newer) against the fake H200's GPM, on a fake clock."""

from __future__ import annotations

import pytest

from fakes.fake_pynvml import FakeGpu, FakePynvml, SteadyTraffic
from xfertop.sources.gpu.nvml_api import GpuLost, NvmlApi
from xfertop.sources.gpu.pcie_gpm import GpmPcie


class Clock:
    def __init__(self) -> None:
        self.now_s = 1_790_000_000.0

    def __call__(self) -> float:
        return self.now_s


def opened(gpu: FakeGpu) -> tuple[GpmPcie, FakePynvml, Clock]:
    clock = Clock()
    fake = FakePynvml([gpu], clock=clock, sleep=lambda _s: None)
    api = NvmlApi(fake)
    assert api.init() is None
    gpm = GpmPcie.open(api, gpu, clock=clock)
    assert gpm is not None
    return gpm, fake, clock


def test_rates_cover_the_whole_time_between_takes() -> None:
    gpm, _, clock = opened(FakeGpu(0, traffic=SteadyTraffic(rx_bytes_per_s=54e9, tx_bytes_per_s=5e9)))
    clock.now_s += 1.0
    rates = gpm.take()
    assert rates.rx_bytes_per_s == pytest.approx(54e9) and rates.tx_bytes_per_s == pytest.approx(5e9)
    assert (rates.coverage, rates.wall_s) == (1.0, pytest.approx(1.0))
    clock.now_s += 0.25  # the next window starts where the last ended
    assert gpm.take().wall_s == pytest.approx(0.25)


def test_a_take_within_100_ms_repeats_the_last_rates_instead_of_a_shorter_window() -> None:
    gpu = FakeGpu(0, traffic=SteadyTraffic(rx_bytes_per_s=10e9))
    gpm, fake, clock = opened(gpu)
    assert gpm.take().rx_bytes_per_s is None  # nothing measured yet: no figure, not a zero
    clock.now_s += 0.5
    first = gpm.take()
    reads = fake.calls.count("nvmlGpmSampleGet")
    clock.now_s += 0.05
    assert gpm.take() is first and fake.calls.count("nvmlGpmSampleGet") == reads


def test_a_read_that_fails_keeps_the_baseline_so_the_next_covers_both_periods() -> None:
    gpu = FakeGpu(0, traffic=SteadyTraffic(rx_bytes_per_s=10e9))
    gpm, _, clock = opened(gpu)
    clock.now_s += 1.0
    gpu.not_supported.add("nvmlGpmSampleGet")
    failed = gpm.take()
    assert (failed.rx_bytes_per_s, failed.coverage) == (None, 0.0)
    gpu.not_supported.discard("nvmlGpmSampleGet")
    clock.now_s += 1.0
    rates = gpm.take()
    assert rates.wall_s == pytest.approx(2.0) and rates.rx_bytes_per_s == pytest.approx(10e9)


def test_no_gpm_means_none_and_no_buffer_is_left_behind() -> None:
    for gpu in (FakeGpu(0, gpm=False), FakeGpu(0, not_supported={"nvmlGpmSampleGet"})):
        fake = FakePynvml([gpu])
        api = NvmlApi(fake)
        assert api.init() is None
        assert GpmPcie.open(api, gpu) is None
        assert all(sample.freed for sample in fake.gpm_samples)


def test_a_binding_without_gpm_means_none() -> None:
    class OldBinding(FakePynvml):
        nvmlGpmQueryDeviceSupport = None

    gpu = FakeGpu(0)
    api = NvmlApi(OldBinding([gpu]))
    assert api.init() is None
    assert GpmPcie.open(api, gpu) is None


def test_a_lost_gpu_raises_gpu_lost_and_close_frees_the_buffers() -> None:
    gpu = FakeGpu(0)
    gpm, fake, clock = opened(gpu)
    gpu.lost = True
    clock.now_s += 1.0
    with pytest.raises(GpuLost):
        gpm.take()
    gpm.close()
    assert len(fake.gpm_samples) == 2 and all(sample.freed for sample in fake.gpm_samples)
