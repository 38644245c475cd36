"""The --prometheus source's own rules: scrape intervals become step records of per-step means, a
counter reset is an increase from zero, node-local job keys stay apart, an unreachable Prometheus is
a sentence. (Against a real Prometheus: tests/export/test_prometheus_cluster.py.)"""

from __future__ import annotations

from export.prometheus_cluster import free_port
from xfertop.analysis.steps import window_stats
from xfertop.sources.prometheus_jobs import (
    RECORDS_PER_INTERVAL,
    PrometheusJobsSource,
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


def test_gpu_clock_shares_apply_to_the_mean_step() -> None:
    series = _series(
        steps=[(0, 0), (10, 100)],
        step_seconds=[(0, 0), (10, 10)],
        gpu_timed_steps=[(0, 0), (10, 10)],
        gpu_timed_step_seconds=[(0, 0), (10, 1)],
        gpu_idle_seconds=[(0, 0), (10, 0.5)],
        compute_gpu_seconds=[(0, 0), (10, 0.4)],
    )
    record = step_records(series)[-1]
    assert (record.wall_ms, record.gpu_idle_ms, record.compute_gpu_ms) == (100.0, 50.0, 40.0)


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
