"""A rank's steps over minutes: one-second sums gathered into buckets for the step strip."""

from __future__ import annotations

import dataclasses

import pytest

from xfertop.analysis.step_timeline import StepTimeline, step_parts_ms
from xfertop.model.jobs import StepRecord


def step(number: int, start_s: float, wall_ms: float = 100.0, wait_ms: float = 40.0) -> StepRecord:
    return StepRecord(
        step=number,
        wall_ms=wall_ms,
        data_wait_ms=wait_ms,
        copy_cpu_ms=10.0,
        loop_pre_ms=5.0,
        sync_ms=2.0,
        loop_post_ms=3.0,
        gpu_gap_ms=None,
        h2d_bytes=0,
        samples=1,
        pinned=True,
        pageable_non_blocking=False,
        start_monotonic_ns=int(start_s * 1e9),
    )


def run(first: int, count: int, start_s: float, **kwargs: float) -> tuple[StepRecord, ...]:
    """``count`` back-to-back steps of 100 ms from step ``first``, the first beginning at ``start_s``."""
    return tuple(step(first + i, start_s + i * 0.1, **kwargs) for i in range(count))


def test_a_bucket_holds_the_sums_of_the_steps_that_began_in_it() -> None:
    timeline = StepTimeline()
    assert timeline.add(run(0, 100, 1000.0)) == 100  # 1000.0-1009.9 s
    closed, newest = timeline.buckets(5, 2)
    assert closed is not None and newest is not None
    assert (closed.start_s, closed.steps, newest.start_s, newest.steps) == (1000, 50, 1005, 50)
    assert closed.wall_ms == pytest.approx(5000.0)
    assert closed.parts_ms == pytest.approx((2000.0, 400.0, 500.0, 2000.0, 100.0))
    assert closed.shares() == pytest.approx((0.4, 0.08, 0.1, 0.4, 0.02))
    assert sum(closed.shares()) == pytest.approx(1.0)
    assert step_parts_ms(step(0, 0.0)) == pytest.approx((40.0, 8.0, 10.0, 40.0, 2.0))


def wait_only(record: StepRecord) -> StepRecord:
    """The step's wall is its wait and its model: no copy, loop work or sync."""
    return dataclasses.replace(record, copy_cpu_ms=0.0, loop_pre_ms=0.0, sync_ms=0.0, loop_post_ms=0.0)


def test_a_share_is_of_the_buckets_time_not_a_mean_of_the_steps_shares() -> None:
    """One 1 s step all wait and nine 10 ms steps without any: the bucket waited 1000 of 1090 ms (a mean
    of the steps' shares would say 10%)."""
    long_wait = wait_only(step(0, 10.0, wall_ms=1000.0, wait_ms=1000.0))
    quick = tuple(wait_only(step(1 + i, 11.0 + i * 0.01, wall_ms=10.0, wait_ms=0.0)) for i in range(9))
    timeline = StepTimeline()
    timeline.add((long_wait, *quick))
    (bucket,) = timeline.buckets(5, 1)
    assert bucket is not None and bucket.shares()[0] == pytest.approx(1000 / 1090)


def test_only_steps_not_seen_are_counted_and_a_closed_bucket_keeps_its_sums() -> None:
    """Each snapshot carries the ring's history again: a step is counted once, and steps in later
    buckets leave a closed bucket as it was."""
    timeline = StepTimeline()
    history = run(0, 30, 1000.0)  # 1000.0-1002.9 s
    timeline.add(history)
    history += run(30, 20, 1003.0, wait_ms=90.0)  # 1003.0-1004.9 s: the same bucket, starved
    assert timeline.add(history) == 20
    assert timeline.add(history) == 0
    (first,) = timeline.buckets(5, 1)
    assert first is not None and first.steps == 50
    history += run(50, 80, 1005.0, wait_ms=0.0)  # 1005.0-1012.9 s
    timeline.add(history[-60:])  # the ring wrapped: steps 70-129 (from 1007.0 s) are what is left
    closed, middle, newest = timeline.buckets(5, 3)
    assert closed == first
    assert middle is not None and middle.steps == 30 and middle.parts_ms[0] == 0.0
    assert newest is not None and newest.steps == 30


def test_seconds_without_a_step_read_as_empty_buckets_and_history_starts_at_the_first_step() -> None:
    timeline = StepTimeline()
    timeline.add(run(0, 10, 1000.0) + run(10, 10, 1012.0))
    assert timeline.oldest_s == 1000 and timeline.newest_s == 1012
    before, first, empty, last = timeline.buckets(5, 4)
    assert before is None and empty is None
    assert first is not None and first.start_s == 1000 and last is not None and last.start_s == 1010


def test_steps_without_a_start_follow_the_previous_steps_end() -> None:
    """Prometheus records carry no start: they are laid end to end from the last step counted."""
    timeline = StepTimeline()
    timeline.add(tuple(dataclasses.replace(s, start_monotonic_ns=0) for s in run(0, 120, 0.0)))
    assert [bucket.steps if bucket else 0 for bucket in timeline.buckets(5, 3)] == [50, 50, 20]


def test_an_hour_is_kept() -> None:
    timeline = StepTimeline(kept_s=60)
    timeline.add(run(0, 10, 1000.0))
    timeline.add(run(10, 10, 1100.0))
    assert timeline.oldest_s == 1100
