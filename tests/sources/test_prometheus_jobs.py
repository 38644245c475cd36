"""The --prometheus source's own rules: scrape intervals become step records of per-step means, a
counter reset is an increase from zero, node-local job keys stay apart, an unreachable Prometheus is
a sentence. (Against a real Prometheus: tests/export/test_prometheus_cluster.py.)"""

from __future__ import annotations

import itertools
import re

import pytest

from export.prometheus_cluster import free_port
from xfertop.analysis.advice import input_bound_advice, is_bursty, restarts_workers
from xfertop.analysis.steps import window_stats
from xfertop.export.prometheus_collector import RANK_COUNTERS
from xfertop.export.prometheus_totals import DATA_WAIT_BUCKETS_S, RankTotals
from xfertop.model.jobs import RankEnd, RankState, StepRecord
from xfertop.sources.jobs.prometheus_jobs import (
    DATA_WAIT_BUCKET,
    RECORDS_PER_INTERVAL,
    PrometheusJobsSource,
    _jobs,
    _Series,
    job_key_of,
    step_records,
)


def _series(**totals_by_time: list[tuple[float, float]]) -> dict[str, _Series]:
    return {
        f"xfertop_rank_{name}_total": _Series({"__name__": f"xfertop_rank_{name}_total"}, samples)
        for name, samples in totals_by_time.items()
    }


def test_each_scrape_interval_becomes_steps_holding_its_per_step_means() -> None:
    # 100 steps in 4 s, 1 s of it waiting for data; then 10 steps in 1 s, all of it waiting.
    series = _series(
        steps=[(0, 100), (10, 200), (20, 210)],
        step_seconds=[(0, 4), (10, 8), (20, 9)],
        data_wait_seconds=[(0, 1), (10, 2), (20, 3)],
        samples=[(0, 800), (10, 1600), (20, 1680)],
    )
    records = step_records(series)
    assert len(records) == RECORDS_PER_INTERVAL + 10
    first, last = records[0], records[-1]
    assert (first.wall_ms, first.data_wait_ms, first.samples) == (40.0, 10.0, 8)
    assert (last.step, last.wall_ms, last.data_wait_ms) == (209, 100.0, 100.0)
    assert [r.step for r in records] == sorted(r.step for r in records)
    assert records[RECORDS_PER_INTERVAL - 1].step == 199
    stats = window_stats(records)
    assert stats is not None and stats.clock == "cpu"


def test_steps_overwritten_unread_carry_no_time_and_a_reset_counts_from_zero() -> None:
    series = _series(
        steps=[(0, 50), (10, 150), (20, 30)],
        steps_unseen=[(0, 0), (10, 50), (20, 0)],
        step_seconds=[(0, 1), (10, 3), (20, 0.6)],
    )
    records = step_records(series)
    assert [r.wall_ms for r in records[:1]] == [40.0]  # 2 s over the 50 steps read, not the 100
    assert records[-1].step == 29 and records[-1].wall_ms == 20.0  # after the reset: 30 steps in 0.6 s


def test_the_gpu_gap_and_the_host_parts_survive_the_trip_through_prometheus() -> None:
    # 60 steps of 100 ms under `xfertop run`: 10 ms of loop work before the model, 2 ms of copies, 5 ms of
    # syncs, 20 ms of loop work after the step; the GPU idled 30 ms before every other step's first work
    # (one gap measured in two steps: the others carry none); every other step synced.
    steps = [
        StepRecord(
            step=n,
            wall_ms=100.0,
            data_wait_ms=10.0,
            copy_cpu_ms=2.0,
            loop_pre_ms=10.0,
            sync_ms=5.0,
            loop_post_ms=20.0,
            gpu_gap_ms=30.0 if n % 2 else None,
            h2d_bytes=4096,
            samples=8,
            pinned=True,
            pageable_non_blocking=False,
            copied=True,
            partitioned=True,
            synced=n % 2 == 0,
        )
        for n in range(60)
    ]
    records = step_records(_scraped(steps, [0, 10, 25, 40, 60]))
    assert [r.step for r in records] == [s.step for s in steps]
    local, remote = window_stats(steps), window_stats(records)
    assert local is not None and remote is not None
    assert (remote.clock, remote.partitioned) == (local.clock, local.partitioned) == ("gpu", True)
    assert remote.host_parts == pytest.approx(local.host_parts)
    assert remote.synced_step_fraction == pytest.approx(local.synced_step_fraction) == 0.5
    assert remote.gpu_idle_share == pytest.approx(local.gpu_idle_share)
    assert remote.idle is not None and local.idle is not None
    assert remote.idle.total == pytest.approx(local.idle.total)


def test_node_local_job_keys_get_their_host() -> None:
    assert job_key_of("run:abc", "node-a") == "run:abc"
    assert job_key_of("master:n1:29500", "node-a") == "master:n1:29500"
    assert job_key_of("pid:42", "node-a") == "pid:42@node-a"


def test_an_unreachable_prometheus_is_the_states_error() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    state = PrometheusJobsSource(url, timeout_s=2).sample()
    assert state.jobs == ()
    assert state.error is not None and state.error.startswith(f"cannot reach Prometheus at {url}: ")
    assert state.ring_dir == url


# -- what the verdict reads beyond the means: flags, copy timing, the end -------------------------------


def _step(number: int, wall_ms: float, wait_ms: float, **flags: bool) -> StepRecord:
    return StepRecord(number, wall_ms, wait_ms, 0.0, 0.0, 0.0, 0.0, None, 0, 8, False, False, **flags)


def _epochs(epochs: int, steps_per_epoch: int, start_wait_ms: float) -> list[StepRecord]:
    """A CPU job whose every epoch starts its workers again (persistent_workers=False): the epoch's first
    step waits ``start_wait_ms`` for them, the others 1 ms of their 20 ms."""
    steps = []
    for number in range(epochs * steps_per_epoch):
        if number % steps_per_epoch == 0:
            steps.append(
                _step(number, 20 + start_wait_ms, start_wait_ms, epoch_start=True, workers_started=True)
            )
        else:
            steps.append(_step(number, 20.0, 1.0))
    return steps


BUCKET_BOUNDS = [*(str(bound) for bound in DATA_WAIT_BUCKETS_S), "+Inf"]


def _scraped(
    steps: list[StepRecord], scrape_after: list[int], with_histogram: bool = True
) -> dict[str, _Series]:
    """The exporter's counters and data-wait histogram (RankTotals, as it sums them) scraped after each
    step count."""
    totals = RankTotals(ring_created_unix_s=0.0, counting_since_unix_s=0.0)
    names = [name.removeprefix("xfertop_rank_") for name, _help, _field in RANK_COUNTERS]
    fields = {name.removeprefix("xfertop_rank_"): field for name, _help, field in RANK_COUNTERS}
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    buckets: dict[str, list[tuple[float, float]]] = {bound: [] for bound in BUCKET_BOUNDS}
    done = 0
    for at, count in enumerate(scrape_after):
        for index in range(done, count):
            totals.add_step(steps[index], gpu_expected=False, previous=steps[index - 1] if index else None)
        done = count
        for name in names:
            samples[name].append((float(at), float(getattr(totals, fields[name]))))
        for bound, cumulative in zip(
            BUCKET_BOUNDS, itertools.accumulate(totals.data_wait_bucket_steps), strict=True
        ):
            buckets[bound].append((float(at), float(cumulative)))
    series = _series(**samples)
    if with_histogram:
        for bound, values in buckets.items():
            series[f"{DATA_WAIT_BUCKET}:{bound}"] = _Series(
                {"__name__": DATA_WAIT_BUCKET, "le": bound}, values
            )
    return series


def test_worker_start_steps_come_back_flagged_with_their_own_wait() -> None:
    # 4 epochs of 8 steps, scraped after the warm-up and at uneven counts.
    steps = _epochs(4, 8, start_wait_ms=300.0)
    records = step_records(_scraped(steps, [0, 5, 12, 20, 32]))
    assert [r.step for r in records] == [s.step for s in steps]
    flagged = [r for r in records if r.workers_started]
    # One per epoch start (steps 0, 8, 16, 24), somewhere in its interval (0-4, 5-11, 12-19, 20-31).
    assert [r.step for r in flagged] == [2, 8, 16, 26]
    assert all(r.epoch_start for r in flagged)
    for record in flagged:
        assert (record.wall_ms, record.data_wait_ms) == (pytest.approx(320.0), pytest.approx(300.0))
    local, remote = window_stats(steps), window_stats(records)
    assert local is not None and remote is not None
    for name in (
        "steps",
        "data_wait_share",
        "compute_share",
        "worker_start_steps",
        "worker_start_wait_share",
    ):
        assert getattr(remote, name) == pytest.approx(getattr(local, name)), name
    assert restarts_workers(remote)
    advice = input_bound_advice(remote, dataloader_workers=2)
    assert advice == input_bound_advice(local, dataloader_workers=2)
    assert "set persistent_workers=True" in advice[0]


def test_in_an_interval_of_more_steps_than_records_the_worker_start_wait_keeps_its_share() -> None:
    steps = _epochs(2, 500, start_wait_ms=2000.0)  # 2 epoch starts among 1000 steps, one interval
    records = step_records(_scraped(steps, [0, 1000]))
    assert len(records) == RECORDS_PER_INTERVAL
    assert sum(r.workers_started for r in records) == 2
    true_share = 2 * 2000 / (2 * 2000 + 998 * 1.0)
    share = sum(r.data_wait_ms for r in records if r.workers_started) / sum(r.data_wait_ms for r in records)
    assert abs(share - true_share) < 0.02
    assert sum(r.wall_ms for r in records) * 1000 / RECORDS_PER_INTERVAL == pytest.approx(
        sum(s.wall_ms for s in steps)
    )


def test_a_copy_marked_without_bytes_comes_back_as_a_copy() -> None:
    steps = [_step(n, 20.0, 1.0, copied=n % 10 == 0) for n in range(40)]
    records = step_records(_scraped(steps, [0, 40]))
    assert sum(r.copied for r in records) == 4
    stats = window_stats(records)
    assert stats is not None and stats.copied_step_fraction > 0
    assert step_records(_scraped([_step(n, 20.0, 1.0) for n in range(40)], [0, 40]))[0].copied is False


def test_an_optimizer_that_steps_now_and_then_comes_back_as_a_torch_optim_job() -> None:
    # Gradient accumulation: the optimizer steps every eighth step. The loop-bound advice says "(no
    # torch.optim)" only where no optimizer stepped; a multi-node view read every job as one without.
    steps = [_step(n, 20.0, 1.0, optimizer_stepped=n % 8 == 7) for n in range(200)]
    stats = window_stats(step_records(_scraped(steps, [0, 100, 200])))
    assert stats is not None and stats.optimizer_step_fraction > 0
    by_hand = window_stats(step_records(_scraped([_step(n, 20.0, 1.0) for n in range(200)], [0, 100, 200])))
    assert by_hand is not None and by_hand.optimizer_step_fraction == 0


def _gauge(name: str, value: float, **labels: str) -> _Series:
    return _Series({"__name__": name, **RANK, **labels}, [(0.0, value)])


RANK = {"host": "node-b", "job_id": "run:j", "pid": "7", "rank": "0"}


def _rank_from(*gauges: _Series, heartbeats: tuple[_Series, ...] = ()) -> RankState:
    counters = [
        _Series({**series.labels, **RANK}, series.samples)
        for series in _scraped(_epochs(1, 8, 1.0), [0, 8]).values()
    ]
    [job] = _jobs(counters, list(gauges), heartbeats)
    [rank] = job.ranks
    return rank


def test_copy_timing_and_how_a_rank_ended_come_from_their_gauges() -> None:
    finished = _gauge("xfertop_rank_status", 1, xfertop_rank_status="finished")
    rank = _rank_from(
        finished,
        _gauge("xfertop_rank_copy_timing", 1),
        _gauge("xfertop_rank_end_info", 1, closed_ring="false", exit_code="", signal="SIGKILL"),
    )
    assert rank.copy_timing
    assert rank.end == RankEnd(closed_ring=False, exit_code=None, signal=9)
    assert rank.end.describe() == "killed by SIGKILL" and rank.end.failed
    exited = _rank_from(
        finished, _gauge("xfertop_rank_end_info", 1, closed_ring="true", exit_code="3", signal="")
    )
    assert exited.end == RankEnd(closed_ring=True, exit_code=3) and not exited.copy_timing
    assert _rank_from(_gauge("xfertop_rank_copy_timing", 0)).end is None  # still live


def test_a_prefetching_thread_and_a_cpu_optimizer_come_from_their_gauges() -> None:
    rank = _rank_from(_gauge("xfertop_rank_loader_off_thread", 1), _gauge("xfertop_rank_cpu_optimizer", 1))
    assert rank.loader_off_thread and rank.cpu_optimizer
    cleared = _rank_from(_gauge("xfertop_rank_loader_off_thread", 0), _gauge("xfertop_rank_cpu_optimizer", 0))
    assert not cleared.loader_off_thread and not cleared.cpu_optimizer
    older = _rank_from(_gauge("xfertop_rank_copy_timing", 1))  # an exporter from before these gauges
    assert not older.loader_off_thread and not older.cpu_optimizer


def test_debug_switches_come_from_their_state_set() -> None:
    rank = _rank_from(
        _gauge("xfertop_rank_debug_switches", 1, xfertop_rank_debug_switches="python_tracer"),
        _gauge("xfertop_rank_debug_switches", 0, xfertop_rank_debug_switches="profiler"),
        _gauge("xfertop_rank_debug_switches", 1, xfertop_rank_debug_switches="anomaly_detection"),
    )
    assert rank.debug_switches == ("anomaly_detection", "python_tracer")  # wire.DEBUG_SWITCHES' order
    assert _rank_from(_gauge("xfertop_rank_copy_timing", 0)).debug_switches == ()


def test_a_busy_thread_comes_from_its_gauge() -> None:
    rank = _rank_from(_gauge("xfertop_rank_busy_thread_cpu_cores", 0.92, thread="metrics"))
    assert (rank.busy_thread, rank.busy_thread_share) == ("metrics", 0.92)
    assert _rank_from(_gauge("xfertop_rank_copy_timing", 0)).busy_thread == ""


def test_the_loops_blocked_shares_come_from_their_gauge() -> None:
    # A producer thread's queue: the loop's work before the model is a wait, not work (verdict input-bound).
    rank = _rank_from(
        _gauge("xfertop_rank_loop_blocked_ratio", 0.9, part="before_model"),
        _gauge("xfertop_rank_loop_blocked_ratio", 0.1, part="after_step"),
    )
    assert (rank.loop_pre_blocked_share, rank.loop_post_blocked_share) == (0.9, 0.1)
    unknown = _rank_from(_gauge("xfertop_rank_copy_timing", 0))
    assert (unknown.loop_pre_blocked_share, unknown.loop_post_blocked_share) == (None, None)


def _bursty(steps: int) -> list[StepRecord]:
    """Persistent workers that mostly keep up: every fifth batch takes 30 ms to arrive, the others 2 ms."""
    return [_step(n, 20 + (30.0 if n % 5 == 4 else 2.0), 30.0 if n % 5 == 4 else 2.0) for n in range(steps)]


def _masked(lines: list[str] | tuple[str, ...]) -> list[str]:
    """Advice with its numbers masked: the milliseconds a rebuilt window quotes are its buckets'."""
    return [re.sub(r"\d+", "N", line) for line in lines]


def test_the_data_wait_histogram_keeps_a_few_long_waits_among_short_ones() -> None:
    steps = _bursty(40)
    local = window_stats(steps)
    remote = window_stats(step_records(_scraped(steps, [0, 5, 17, 28, 40])))
    assert local is not None and remote is not None
    assert remote.data_wait_share == pytest.approx(local.data_wait_share)
    assert remote.compute_share == pytest.approx(local.compute_share)
    assert (remote.data_wait.p50_ms, remote.data_wait.p95_ms) == (
        pytest.approx(local.data_wait.p50_ms, rel=0.4),
        pytest.approx(local.data_wait.p95_ms, rel=0.2),
    )
    advice = input_bound_advice(local, dataloader_workers=2)
    assert any(line.startswith("Waits are bursty") for line in advice)
    assert _masked(input_bound_advice(remote, dataloader_workers=2)) == _masked(advice)
    assert is_bursty(remote)
    # From an exporter without the histogram the waits are the intervals' means: not bursty.
    flat = window_stats(step_records(_scraped(steps, [0, 5, 17, 28, 40], with_histogram=False)))
    assert flat is not None and not is_bursty(flat)


def test_a_histogram_that_does_not_hold_the_intervals_steps_is_not_used() -> None:
    series = _scraped(_bursty(40), [0, 40])
    key = f"{DATA_WAIT_BUCKET}:+Inf"
    series[key] = _Series(series[key].labels, [(0.0, 0.0), (1.0, 39.0)])  # one step short
    records = step_records(series)
    assert len({r.data_wait_ms for r in records}) == 1


def test_the_heartbeat_age_is_the_one_now_not_the_one_at_the_last_scrape() -> None:
    scraped = _gauge("xfertop_rank_heartbeat_age_seconds", 0.1)
    # HEARTBEAT_QUERY's answer (no metric name): 0.1 s at a scrape 9 s ago.
    now = _Series(dict(RANK), [(0.0, 9.1)])
    assert _rank_from(scraped).heartbeat_age_s == 0.1
    assert _rank_from(scraped, heartbeats=(now,)).heartbeat_age_s == 9.1


def test_a_few_long_waits_without_epoch_marks_read_as_spikes_not_as_too_few_workers() -> None:
    # One batch in 20 takes 500 ms (a storage hiccup); persistent workers: no epoch marks.
    steps = [
        _step(n, 20 + (500.0 if n % 20 == 10 else 1.0), 500.0 if n % 20 == 10 else 1.0) for n in range(45)
    ]
    local = window_stats(steps)
    remote = window_stats(step_records(_scraped(steps, [0, 5, 20, 33, 45])))
    assert local is not None and remote is not None
    advice = input_bound_advice(local, dataloader_workers=4)
    assert advice[0].startswith("A few steps hold most of the wait")
    assert not any(line.startswith("Raise num_workers") for line in advice)
    assert _masked(input_bound_advice(remote, dataloader_workers=4)) == _masked(advice)
