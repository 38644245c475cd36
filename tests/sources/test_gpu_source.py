"""The GPU source against a fake H200 (recorded answers), and against this machine's missing driver."""

from __future__ import annotations

import os

import pytest

from fakes.fake_pynvml import FakeGpu, FakePynvml, SteadyTraffic
from xfertop.model.gpu import GpuState
from xfertop.sources.gpu.gpu_facts import cuda_version_text, throttle_words
from xfertop.sources.gpu.nvml_api import NvmlApi
from xfertop.sources.gpu.source import GpuSource

NO_DRIVER = "no NVIDIA driver found (libnvidia-ml.so.1): showing host metrics only"
H2D_WIRE_BYTES_PER_S = 59.2e9  # what the H200's counters read during a pinned H2D loop
VANISHED_PID = 2**22 + 17  # above the default pid_max: no such process


def make_source(
    sources: list[GpuSource], fake: FakePynvml, first_window_s: float = 0.1, pcie: str = "auto"
) -> GpuSource:
    source = GpuSource(api=NvmlApi(fake), first_window_s=first_window_s, pcie=pcie)
    sources.append(source)
    return source


def test_no_driver_on_this_machine_gives_no_gpus_and_the_reason(sources: list[GpuSource]) -> None:
    source = GpuSource()
    sources.append(source)
    state = source.sample_once()
    if state.error is None:
        pytest.skip("an NVIDIA driver is present here")
    assert state.gpus == ()
    assert state.error == NO_DRIVER


def test_one_h200_reads_as_recorded(sources: list[GpuSource]) -> None:
    fake = FakePynvml(
        [FakeGpu(0, traffic=SteadyTraffic(rx_bytes_per_s=H2D_WIRE_BYTES_PER_S, tx_bytes_per_s=5.15e9))]
    )
    state = make_source(sources, fake).sample_once()
    assert (state.driver_version, state.cuda_driver_version, state.error) == ("580.159.04", "13.0", None)
    (gpu,) = state.gpus
    assert (gpu.name, gpu.uuid, gpu.bus_id) == (
        "NVIDIA H200",
        "GPU-b8361e20-a5c9-4f2b-b69b-77be6f3fb39f",
        "00000000:00:06.0",
    )
    assert (gpu.mem_used_bytes, gpu.mem_total_bytes) == (644_939_776, 150_754_820_096)
    assert (gpu.util_gpu_percent, gpu.util_mem_percent) == (0.0, 0.0)
    assert (gpu.sm_clock_mhz, gpu.mem_clock_mhz, gpu.temperature_c) == (345, 3201, 30.0)
    assert (gpu.power_w, gpu.power_limit_w) == (pytest.approx(76.681), 700.0)
    assert gpu.throttle_reasons == ("idle",)
    assert (
        gpu.link.gen_current,
        gpu.link.width_current,
        gpu.link.gen_max,
        gpu.link.width_max,
        gpu.link.gen_gpu_max,
    ) == (5, 16, 5, 16, 5)
    assert (gpu.errors.replay_delta, gpu.errors.correctable_delta) == (0, 0)
    # The H200 has GPM: one sample per snapshot covers the whole interval, no counter thread.
    assert gpu.pcie.method == "gpm" and gpu.pcie.coverage == 1.0
    assert gpu.pcie.rx_bytes_per_s == pytest.approx(H2D_WIRE_BYTES_PER_S, rel=1e-3)
    assert gpu.pcie.tx_bytes_per_s == pytest.approx(5.15e9, rel=1e-3)
    assert gpu.lost_reason is None
    assert "nvmlDeviceGetPcieThroughput_RX" not in fake.calls  # never the blocking sampler
    assert make_source(sources, fake).poller is None


def test_where_gpm_answers_the_byte_counters_are_never_read(sources: list[GpuSource]) -> None:
    fake = FakePynvml([FakeGpu(0)])
    make_source(sources, fake).sample_once()
    # The one field read is the correctable-error counter (field 173), not bytes 197/198 (0.3 ms each).
    assert fake.calls.count("nvmlDeviceGetFieldValues") == 1


def test_pcie_counters_polls_the_byte_counters_even_where_gpm_answers(sources: list[GpuSource]) -> None:
    fake = FakePynvml(
        [FakeGpu(0, traffic=SteadyTraffic(rx_bytes_per_s=H2D_WIRE_BYTES_PER_S, tx_bytes_per_s=5.15e9))]
    )
    source = make_source(sources, fake, pcie="counters")
    pcie = source.sample_once().gpus[0].pcie
    assert pcie.method == "counter" and source.poller is not None
    assert pcie.rx_bytes_per_s == pytest.approx(H2D_WIRE_BYTES_PER_S, rel=1e-3)
    assert pcie.tx_bytes_per_s == pytest.approx(5.15e9, rel=1e-3)
    assert pcie.coverage is not None and 0 < pcie.coverage <= 1
    assert "nvmlGpmSampleGet" not in fake.calls


def test_a_gpu_without_gpm_uses_the_counters_next_to_one_with_gpm(sources: list[GpuSource]) -> None:
    fake = FakePynvml.h200s(2)
    fake.gpus[1].gpm = False  # an A100, say, beside it
    for gpu in fake.gpus:
        gpu.traffic = SteadyTraffic(rx_bytes_per_s=(gpu.index + 1) * 10e9)
    source = make_source(sources, fake)
    first, second = source.sample_once().gpus
    assert (first.pcie.method, second.pcie.method) == ("gpm", "counter")
    assert first.pcie.rx_bytes_per_s == pytest.approx(10e9, rel=1e-3)
    assert second.pcie.rx_bytes_per_s == pytest.approx(20e9, rel=1e-3)
    assert source.poller is not None and source.poller.interval_s > 0


def test_gpm_buffers_are_freed_when_the_source_stops(sources: list[GpuSource]) -> None:
    fake = FakePynvml.h200s(2)
    source = make_source(sources, fake, first_window_s=0)
    source.sample_once()
    assert len(fake.gpm_samples) == 4 and not any(sample.freed for sample in fake.gpm_samples)
    source.stop()
    assert all(sample.freed for sample in fake.gpm_samples)


def test_without_byte_counters_it_falls_back_to_20ms_samples_and_says_so(sources: list[GpuSource]) -> None:
    gpu = FakeGpu(0, traffic=SteadyTraffic(rx_bytes_per_s=30e9), fields_not_supported={198}, gpm=False)
    source = make_source(sources, FakePynvml([gpu]))
    state = source.sample_once()
    pcie = state.gpus[0].pcie
    assert pcie.method == "sampled"
    assert pcie.rx_bytes_per_s == pytest.approx(30e9, rel=1e-3)  # KB/s x 1000
    assert pcie.tx_bytes_per_s == 0
    assert pcie.coverage == pytest.approx(0.020 / source.interval_s)
    assert source.poller is None  # nothing to poll: no thread spinning for nothing
    assert any("20 ms samples" in note for note in state.notes)


def test_neither_counters_nor_sampler_gives_method_none(sources: list[GpuSource]) -> None:
    gpu = FakeGpu(
        0, fields_not_supported={197, 198}, not_supported={"nvmlDeviceGetPcieThroughput"}, gpm=False
    )
    pcie = make_source(sources, FakePynvml([gpu])).sample_once().gpus[0].pcie
    assert (pcie.method, pcie.rx_bytes_per_s, pcie.tx_bytes_per_s) == ("none", None, None)


def test_unsupported_readings_show_as_none_and_the_rest_still_reads(sources: list[GpuSource]) -> None:
    gpu = FakeGpu(
        0,
        not_supported={
            "nvmlDeviceGetPowerUsage",
            "nvmlDeviceGetTemperature",
            "nvmlDeviceGetUtilizationRates",
            "nvmlDeviceGetPcieReplayCounter",
        },
        fields_not_supported={173},
    )
    snapshot = make_source(sources, FakePynvml([gpu])).sample_once().gpus[0]
    assert (snapshot.power_w, snapshot.temperature_c, snapshot.util_gpu_percent) == (None, None, None)
    assert (snapshot.errors.replay_delta, snapshot.errors.correctable_delta) == (None, None)
    assert snapshot.power_limit_w == 700.0 and snapshot.pcie.method == "gpm"


def test_an_old_binding_reads_throttle_reasons_by_their_old_name(sources: list[GpuSource]) -> None:
    gpu = FakeGpu(0)
    gpu.answers["nvmlDeviceGetCurrentClocksThrottleReasons"] = 0x4 | 0x8
    fake = FakePynvml([gpu], missing_in_binding=frozenset({"nvmlDeviceGetCurrentClocksEventReasons"}))
    assert make_source(sources, fake).sample_once().gpus[0].throttle_reasons == ("power cap", "hw slowdown")


def test_throttle_bits_in_words() -> None:
    assert throttle_words(0) == ()
    assert throttle_words(0x20 | 0x40) == ("sw thermal", "hw thermal")
    assert throttle_words(0x1 | 0x8000) == ("idle", "reason 0x8000")


def test_cuda_driver_versions_read_as_people_write_them() -> None:
    assert [cuda_version_text(v) for v in (13000, 12040, None)] == ["13.0", "12.4", None]


def test_error_counters_are_deltas_since_start_read_every_5_s(sources: list[GpuSource]) -> None:
    gpu = FakeGpu(0)
    clock = [100.0]
    source = GpuSource(api=NvmlApi(FakePynvml([gpu])), first_window_s=0, monotonic=lambda: clock[0])
    sources.append(source)
    source.sample_once()
    gpu.answers["nvmlDeviceGetPcieReplayCounter"] = 5  # recorded: 1
    gpu.answers["field_173"] = 3  # recorded: 0
    gpu.answers["nvmlDeviceGetEnforcedPowerLimit"] = 600_000
    clock[0] += 4.0
    unchanged = source.sample_once().gpus[0]  # within 5 s: the figures read at start
    assert (unchanged.errors.replay_delta, unchanged.errors.correctable_delta) == (0, 0)
    assert unchanged.power_limit_w == 700.0
    clock[0] += 1.0
    later = source.sample_once().gpus[0]
    assert (later.errors.replay_delta, later.errors.correctable_delta) == (4, 3)
    assert later.power_limit_w == 600.0


def test_a_gpu_lost_mid_run_is_marked_and_the_others_carry_on(sources: list[GpuSource]) -> None:
    fake = FakePynvml.h200s(2)
    for gpu in fake.gpus:  # no counter thread, so every call counted below is the source's own
        gpu.fields_not_supported = {197, 198}
    source = make_source(sources, fake)
    source.sample_once()
    fake.gpus[1].lost = True
    state = source.sample_once()
    assert state.gpus[0].lost_reason is None and state.gpus[0].mem_used_bytes == 644_939_776
    lost = state.gpus[1]
    assert lost.lost_reason is not None and "fell off the bus" in lost.lost_reason
    assert (lost.name, lost.link.gen_max, lost.mem_used_bytes, lost.pcie.method) == (
        "NVIDIA H200",
        5,
        None,
        "none",
    )
    calls_before = len(fake.calls)
    source.sample_once()
    lost_calls = len(fake.calls) - calls_before
    fake.gpus[1].lost = False  # even if it answered again, a lost GPU is not asked once marked
    assert source.sample_once().gpus[1].lost_reason is not None
    assert len(fake.calls) - calls_before == 2 * lost_calls


def test_eight_gpus_each_with_their_own_traffic(sources: list[GpuSource]) -> None:
    fake = FakePynvml.h200s(8)
    for gpu in fake.gpus:
        gpu.traffic = SteadyTraffic(rx_bytes_per_s=(gpu.index + 1) * 5e9)
    state = make_source(sources, fake).sample_once()
    assert [gpu.index for gpu in state.gpus] == list(range(8))
    assert len({gpu.uuid for gpu in state.gpus}) == len({gpu.bus_id for gpu in state.gpus}) == 8
    rx_gb_per_s = [round(gpu.pcie.rx_bytes_per_s / 1e9, 2) for gpu in state.gpus]
    assert rx_gb_per_s == [5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 35.0, 40.0]


def test_processes_are_joined_with_the_host_and_a_vanished_one_has_no_owner(sources: list[GpuSource]) -> None:
    class Proc:
        def __init__(self, pid: int, used: int | None) -> None:
            self.pid, self.usedGpuMemory = pid, used

    gpu = FakeGpu(0, processes=[Proc(os.getpid(), 2**30), Proc(VANISHED_PID, None)])
    mine, vanished = make_source(sources, FakePynvml([gpu])).sample_once().gpus[0].processes
    assert (mine.pid, mine.gpu_memory_bytes) == (os.getpid(), 2**30)
    assert mine.user and mine.command and "python" in mine.command.lower()
    assert (vanished.pid, vanished.user, vanished.command, vanished.gpu_memory_bytes) == (
        VANISHED_PID,
        None,
        None,
        None,
    )


def test_the_thread_publishes_and_stops(sources: list[GpuSource]) -> None:
    fake = FakePynvml([FakeGpu(0, traffic=SteadyTraffic(rx_bytes_per_s=1e9))])
    source = make_source(sources, fake, pcie="counters")
    source.interval_s = 0.1
    seen: list[GpuState] = []
    source.subscribe(seen.append)
    source.start()
    state = source.wait_for_sample(timeout_s=10)
    assert state is not None and state.gpus[0].pcie.method == "counter"
    source.stop()
    assert seen and source.poller is not None and source.last_error is None
    assert fake.calls.count("nvmlShutdown") == 1


def test_an_unknown_pcie_choice_is_refused() -> None:
    with pytest.raises(ValueError, match="counters"):
        GpuSource(pcie="nvlink")


def test_stop_without_a_thread_releases_nvml(sources: list[GpuSource]) -> None:
    fake = FakePynvml([FakeGpu(0)])
    source = make_source(sources, fake, first_window_s=0)
    source.sample_once()
    source.stop()
    assert fake.calls.count("nvmlShutdown") == 1
