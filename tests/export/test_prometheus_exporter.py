"""The exporter in-process over real rings (a RingWriter in this process) and the recorded H200 (NVML
faked): each step counted once, counters monotonic across a ring wrap and a restart, ended ranks
dropped after their grace, GPU PCIe bytes integrated from the full-coverage rates; the exposition as
prometheus_client's parsers read it."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

from prometheus_client.exposition import generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families

from analysis.step_records import step_record
from fakes.fake_pynvml import FakePynvml, SteadyTraffic
from ring_test_tools import wait_until
from ui.live import BreakableHostSource, fake_gpu_source
from ui.sample_states import gpu_state
from xfertop import wire
from xfertop.analysis.evidence import Context
from xfertop.analysis.job_analysis import RankAnalysis
from xfertop.analysis.verdict import job_verdict, window_or_early
from xfertop.export.prometheus_collector import RANK_COUNTERS, VERDICT_KINDS
from xfertop.export.prometheus_exporter import Exporter
from xfertop.export.prometheus_totals import TotalsState
from xfertop.model.gpu import GpuState, PcieErrors
from xfertop.model.jobs import RankState
from xfertop.reporter._identity import current_identity
from xfertop.reporter._ring_writer import RingWriter
from xfertop.sources.jobs.source import JobsSource

STEP_NS = 10_000_000
WAIT_NS = 4_000_000
#: The loop's own work before the model, syncs and the loop's work after it, in each step (`xfertop run`).
LOOP_PRE_NS, SYNC_NS, LOOP_POST_NS = 500_000, 200_000, 300_000


class Ring:
    """A ring this process writes, ``capacity`` slots, 10 ms steps of which 4 ms wait for data, 1 ms
    copies, 0.5 ms of loop work before the model, 0.2 ms of syncs and 0.3 ms of loop work after it."""

    def __init__(self, ring_dir: Path, capacity: int = 8, **identity: object) -> None:
        fields = {
            "pid": os.getpid(),
            "run_id": "job-1",
            "rank": 0,
            "local_rank": 0,
            "world_size": 1,
            "argv": ("python", "train.py"),
            **identity,
        }
        self.writer = RingWriter(
            str(ring_dir), dataclasses.replace(current_identity(), **fields), capacity=capacity
        )
        self.writer.set_device("cpu")
        self.next_step = 0

    def write(self, count: int, flags: int = wire.F_COPIED, gpu: bool = False) -> None:
        start_ns = time.perf_counter_ns()
        for _ in range(count):
            step = self.next_step
            pending = wire.F_GPU_PENDING if gpu else 0
            self.writer.write_step(
                step,
                start_ns + step * STEP_NS,
                STEP_NS,
                WAIT_NS,
                1_000_000,
                LOOP_PRE_NS,
                SYNC_NS,
                wire.NO_VALUE,  # no GPU gap (yet)
                1024,
                8,
                flags | pending,
                LOOP_POST_NS,
            )
            self.next_step += 1


def _exporter(ring_dir: Path, state: Path | None = None, **kwargs: object) -> tuple[Exporter, JobsSource]:
    jobs = JobsSource(ring_dir=str(ring_dir))
    exporter = Exporter(
        None, None, jobs, host_label="node-a", state_path=str(state) if state else None, **kwargs
    )  # type: ignore[arg-type]
    return exporter, jobs


def _samples(exporter: Exporter) -> dict[tuple[str, str], float]:
    """(sample name, rank label) -> value, from the Prometheus text the exporter serves."""
    text = generate_latest(exporter.registry).decode()
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, sample.labels.get("rank", ""))] = sample.value
    return found


def test_each_step_counts_once_and_a_wrap_counts_the_steps_it_overwrote(tmp_path: Path) -> None:
    ring = Ring(tmp_path, capacity=8)
    exporter, jobs = _exporter(tmp_path)
    ring.write(5)
    jobs.sample_once()
    jobs.sample_once()  # the same steps again: nothing more is counted
    first = _samples(exporter)
    assert first[("xfertop_rank_steps_total", "0")] == 5
    assert first[("xfertop_rank_step_seconds_total", "0")] == 5 * 0.010
    assert first[("xfertop_rank_data_wait_seconds_total", "0")] == 5 * 0.004
    assert abs(first[("xfertop_rank_loop_pre_seconds_total", "0")] - 5 * 0.0005) < 1e-9
    assert abs(first[("xfertop_rank_sync_seconds_total", "0")] - 5 * 0.0002) < 1e-9
    assert abs(first[("xfertop_rank_loop_post_seconds_total", "0")] - 5 * 0.0003) < 1e-9
    # 20 more steps while nobody reads: the 8-slot ring keeps the last 7, the others are overwritten.
    ring.write(20)
    jobs.sample_once()
    second = _samples(exporter)
    assert second[("xfertop_rank_steps_total", "0")] == 25
    unseen = second[("xfertop_rank_steps_unseen_total", "0")]
    assert unseen == 25 - 5 - 7
    seen = 25 - unseen
    assert abs(second[("xfertop_rank_step_seconds_total", "0")] - seen * 0.010) < 1e-9
    assert second[("xfertop_rank_samples_total", "0")] == seen * 8
    for name, _help, _field in RANK_COUNTERS:
        assert second[(f"{name}_total", "0")] >= first[(f"{name}_total", "0")], name


def test_gpu_times_resolved_after_the_step_are_added_once(tmp_path: Path) -> None:
    ring = Ring(tmp_path, capacity=64)
    ring.writer.set_device("cuda:0")
    exporter, jobs = _exporter(tmp_path)
    ring.write(3, gpu=True)
    jobs.sample_once()
    assert _samples(exporter)[("xfertop_rank_gpu_timed_steps_total", "0")] == 0
    for step in range(3):
        ring.writer.patch_gpu(step, 3_000_000, wire.F_GPU_RESOLVED, wire.F_GPU_PENDING)
    jobs.sample_once()
    jobs.sample_once()
    found = _samples(exporter)
    assert found[("xfertop_rank_gpu_timed_steps_total", "0")] == 3
    assert abs(found[("xfertop_rank_gpu_timed_step_seconds_total", "0")] - 3 * 0.010) < 1e-9
    assert abs(found[("xfertop_rank_gpu_gap_seconds_total", "0")] - 3 * 0.003) < 1e-9
    assert found[("xfertop_rank_steps_total", "0")] == 3


def test_a_gap_longer_than_the_step_counts_only_what_the_host_explains(tmp_path: Path) -> None:
    # The GPU idled 50 ms before a 10 ms step (a checkpoint between epochs, outside any step): the share
    # of the steps' wall may not pass 1, and the part no step explains is left out.
    ring = Ring(tmp_path, capacity=64)
    ring.writer.set_device("cuda:0")
    exporter, jobs = _exporter(tmp_path)
    ring.write(2, gpu=True)
    ring.writer.patch_gpu(1, 50_000_000, wire.F_GPU_RESOLVED, wire.F_GPU_PENDING)
    jobs.sample_once()
    found = _samples(exporter)
    gap, wall = (
        found[(name, "0")]
        for name in ("xfertop_rank_gpu_gap_seconds_total", "xfertop_rank_gpu_timed_step_seconds_total")
    )
    assert 0 < gap <= wall == 0.010


def test_partitioned_and_synced_steps_are_counted(tmp_path: Path) -> None:
    ring = Ring(tmp_path, capacity=64)
    exporter, jobs = _exporter(tmp_path)
    ring.write(4, flags=wire.F_COPIED | wire.F_PARTITIONED | wire.F_SYNCED)
    ring.write(2, flags=wire.F_COPIED | wire.F_PARTITIONED)
    ring.write(1, flags=wire.F_COPIED)  # watch() alone: the model's calls not seen
    jobs.sample_once()
    found = _samples(exporter)
    assert found[("xfertop_rank_partitioned_steps_total", "0")] == 6
    assert found[("xfertop_rank_synced_steps_total", "0")] == 4
    assert found[("xfertop_rank_steps_total", "0")] == 7


def test_a_restarted_exporter_carries_on_from_its_state_file(tmp_path: Path) -> None:
    rings, state = tmp_path / "rings", tmp_path / "state.json"
    rings.mkdir(mode=0o700)
    ring = Ring(rings, capacity=8)
    ring.write(6)
    before, jobs = _exporter(rings, state)
    jobs.sample_once()
    published = _samples(before)  # a scrape saves the state
    jobs.stop()
    ring.write(30)  # the exporter is down and the ring wraps meanwhile
    after, jobs = _exporter(rings, state)
    jobs.sample_once()
    again = _samples(after)
    for key, value in published.items():
        if key[0].endswith("_total"):
            assert again[key] >= value, key
    assert again[("xfertop_rank_steps_total", "0")] == 36
    # Without the state file the counters restart from what the ring holds: Prometheus sees a reset.
    fresh, jobs = _exporter(rings, None)
    jobs.sample_once()
    key = ("xfertop_rank_step_seconds_total", "0")
    assert _samples(fresh)[key] < again[key]


def test_created_is_the_ring_creation_while_the_ring_holds_step_zero(tmp_path: Path) -> None:
    ring = Ring(tmp_path, capacity=8)
    ring.write(3)
    exporter, jobs = _exporter(tmp_path)
    jobs.sample_once()
    text = generate_openmetrics(exporter.registry).decode()
    families = {family.name: family for family in parse_openmetrics(text)}
    steps = families["xfertop_rank_steps"]
    assert steps.type == "counter"
    created = next(s.value for s in steps.samples if s.name == "xfertop_rank_steps_created")
    header_created_s = ring.writer.words[wire.H_CREATED_UNIX_NS] / 1e9
    assert abs(created - header_created_s) < 1e-3
    verdict = families["xfertop_rank_verdict"]
    assert verdict.type == "stateset"
    states = {s.labels["xfertop_rank_verdict"]: s.value for s in verdict.samples}
    assert set(states) == set(VERDICT_KINDS)
    assert sum(states.values()) == 1 and states["warming-up"] == 1


def test_ended_ranks_are_dropped_after_the_grace_and_not_counted_again(tmp_path: Path) -> None:
    rings, state = tmp_path / "rings", tmp_path / "state.json"
    rings.mkdir(mode=0o700)
    ring = Ring(rings, capacity=64)
    ring.write(10)
    ring.writer.close()  # the ring says the reporter ended
    clock = [100.0]
    jobs = JobsSource(ring_dir=str(rings))
    exporter = Exporter(None, None, jobs, host_label="node-a", state_path=str(state), ended_grace_s=30.0)
    exporter.totals._monotonic = lambda: clock[0]
    jobs.sample_once()
    assert ("xfertop_rank_steps_total", "0") in _samples(exporter)
    clock[0] += 31
    jobs.sample_once()
    jobs.sample_once()
    assert ("xfertop_rank_steps_total", "0") not in _samples(exporter)
    # A restarted exporter keeps it dropped while the ring is still there.
    restarted, jobs = _exporter(rings, state)
    jobs.sample_once()
    assert ("xfertop_rank_steps_total", "0") not in _samples(restarted)


def test_gpu_series_and_pcie_bytes_integrated_over_full_coverage(tmp_path: Path) -> None:
    nvml = FakePynvml.h200s(1)
    nvml.gpus[0].traffic = SteadyTraffic(rx_bytes_per_s=2e9, tx_bytes_per_s=5e8)
    gpu = fake_gpu_source(nvml, interval_s=0.1)
    exporter = Exporter(gpu, None, None, host_label="node-a")
    states: list = []
    gpu.subscribe(states.append)
    gpu.start()
    try:
        wait_until(lambda: len(states) >= 6, 10.0, "six GPU snapshots")
    finally:
        gpu.stop()
    text = generate_latest(exporter.registry).decode()
    values = {
        (s.name, s.labels.get("gpu")): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    # Every interval after the first snapshot is integrated at the rate measured over it.
    first, last = states[0], states[-1]
    elapsed_s = last.timestamp - first.timestamp
    rx = values[("xfertop_gpu_pcie_rx_bytes_total", "0")]
    assert last.gpus[0].pcie.method in ("gpm", "counter")
    assert abs(rx - 2e9 * elapsed_s) / (2e9 * elapsed_s) < 0.15
    assert values[("xfertop_gpu_pcie_link_generation", "0")] == 5
    assert values[("xfertop_gpu_pcie_link_capacity_bytes_per_second", "0")] > 60e9
    assert values[("xfertop_gpu_memory_total_bytes", "0")] > 100e9
    assert ("xfertop_gpu_sm_clock_hertz", "0") in values


def test_pcie_error_counters_add_up_across_exporter_runs() -> None:
    def with_errors(replays: int, correctable: int) -> GpuState:
        state = gpu_state(1)
        return dataclasses.replace(
            state, gpus=(dataclasses.replace(state.gpus[0], errors=PcieErrors(replays, correctable)),)
        )

    first_run = TotalsState()
    first_run.on_gpu(with_errors(3, 1))
    first_run.on_gpu(with_errors(5, 1))
    uuid = gpu_state(1).gpus[0].uuid
    assert (first_run.pcie[uuid].replay_errors, first_run.pcie[uuid].correctable_errors) == (5, 1)
    second_run = TotalsState()
    second_run.load_json(first_run.to_json())
    second_run.on_gpu(with_errors(2, 0))  # a new GPU source counts from zero again
    assert (second_run.pcie[uuid].replay_errors, second_run.pcie[uuid].correctable_errors) == (7, 1)


def test_epoch_and_worker_start_steps_copy_timing_and_the_end_are_exported(tmp_path: Path) -> None:
    ring = Ring(tmp_path, capacity=64)
    ring.writer.set_word(wire.H_STATE_FLAGS, wire.STATE_COPY_TIMING)
    exporter, jobs = _exporter(tmp_path)
    ring.write(1, flags=wire.F_EPOCH_START | wire.F_WORKERS_STARTED)  # the epoch's iter() started workers
    ring.write(3, flags=0)
    ring.write(1, flags=wire.F_EPOCH_START)  # a validation pass without workers
    ring.writer.set_word(wire.H_LAUNCH_EXIT, wire.encode_launch_exit(None, 9))
    ring.writer.close()
    jobs.sample_once()
    found = _samples(exporter)
    assert found[("xfertop_rank_epoch_start_steps_total", "0")] == 2
    assert found[("xfertop_rank_worker_start_steps_total", "0")] == 1
    assert found[("xfertop_rank_worker_start_step_seconds_total", "0")] == STEP_NS / 1e9
    assert found[("xfertop_rank_worker_start_data_wait_seconds_total", "0")] == WAIT_NS / 1e9
    assert found[("xfertop_rank_copied_steps_total", "0")] == 5  # every step moved bytes
    assert found[("xfertop_rank_copy_timing", "0")] == 1
    families = {f.name: f for f in parse_openmetrics(generate_openmetrics(exporter.registry).decode())}
    assert families["xfertop_rank_end"].type == "info"
    [end] = families["xfertop_rank_end"].samples
    assert (end.labels["closed_ring"], end.labels["exit_code"], end.labels["signal"]) == (
        "true",
        "",
        "SIGKILL",
    )


def test_docs_list_every_rank_series(tmp_path: Path) -> None:
    ring = Ring(tmp_path, capacity=64)
    exporter, jobs = _exporter(tmp_path)
    ring.write(3)
    ring.writer.close()
    jobs.sample_once()
    names = {name for name, _rank in _samples(exporter) if name.startswith("xfertop_rank_")}
    names = {name for name in names if not name.endswith("_created")}
    docs = (Path(__file__).resolve().parents[2] / "docs" / "exporter.md").read_text()
    assert "xfertop_rank_end_info" in names
    assert [name for name in sorted(names) if f"`{name}`" not in docs] == []


def test_a_ranks_own_verdict_rests_on_its_context_as_the_job_verdict_does() -> None:
    # Steps with measured gaps that never wait; NVML says the GPU computes 30% of the time and its link
    # receives 20 GB/s that no timed copy accounts for (`xfertop.watch` alone: copies not measured).
    steps = tuple(step_record(n, wall_ms=10.0, wait_ms=0.1, gap_ms=0.05, samples=8) for n in range(40))
    rank = RankState(
        pid=1, host="node-a", rank=0, local_rank=0, world_size=1, job_key="run:j", device="cuda:0",
        argv=("train.py",), status="live", heartbeat_age_s=0.0, steps=steps, pinned_host_bytes=None,
        dataloader_workers=4, reporter_errors=0, reporter_disabled=False, ring_path="/rings/a.ring",
    )  # fmt: skip
    context = Context(
        copies_measured=False, gpu_busy_share=0.3, gpu_rx_bytes_per_s=20e9, link_bytes_per_s=63e9
    )
    analysed = RankAnalysis(rank, window_or_early(steps), context)
    job = job_verdict(
        (rank,), stats_by_rank={rank.ring_path: analysed.stats}, contexts={rank.ring_path: context}
    )
    assert job.kind == "copy-bound"
    assert analysed.verdict.kind == job.kind


def test_a_failing_source_is_withheld_and_said_to_fail() -> None:
    # A host source whose samples raise (a bug) must not serve its last figures as if live.
    host = BreakableHostSource()
    exporter = Exporter(None, host, None, host_label="node-a")  # type: ignore[arg-type]
    host.sample_once()
    samples = _samples(exporter)
    assert samples[("xfertop_source_failing", "")] == 0.0
    assert ("xfertop_host_cpu_cores", "") in samples
    host.broken.set()
    host.start()
    try:
        assert host.failed.wait(10)
        samples = _samples(exporter)
        assert samples[("xfertop_source_failing", "")] == 1.0
        assert ("xfertop_host_cpu_cores", "") not in samples
        # The exporter's log says it once, with why, not at every wake.
        assert exporter.source_news() == [
            "host sampling fails (KeyError: 'cpu7'): its series are withheld until it works"
        ]
        assert exporter.source_news() == []
        host.broken.clear()
        assert host.recovered.wait(10)
        samples = _samples(exporter)
        assert samples[("xfertop_source_failing", "")] == 0.0
        assert ("xfertop_host_cpu_cores", "") in samples
        assert exporter.source_news() == ["host sampling works again"]
        assert exporter.source_news() == []
    finally:
        host.stop()
