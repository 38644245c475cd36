"""Window statistics: which steps count, which clock is used, and where each step's time went."""

from __future__ import annotations

import dataclasses

import pytest
from step_records import step_record
from window_fixtures import load_window

from xfertop.analysis.steps import (
    IdleShares,
    attribute_idle,
    between_iterations_ms,
    percentile,
    select_window,
    window_stats,
)
from xfertop.analysis.thresholds import MIN_WINDOW_STEPS, WARMUP_STEPS, WINDOW_STEPS
from xfertop.model.jobs import StepRecord


def cpu_step(
    step: int,
    wall_ms: float = 100.0,
    data_wait_ms: float = 30.0,
    copy_cpu_ms: float = 5.0,
    h2d_bytes: int = 0,
    samples: int = 64,
    pinned: bool = False,
    pageable_non_blocking: bool = False,
) -> StepRecord:
    """A step without a measured gap (a CPU job, or a GPU step not timed): the host's clock alone."""
    return step_record(
        step,
        wall_ms=wall_ms,
        wait_ms=data_wait_ms,
        copy_ms=copy_cpu_ms,
        h2d_bytes=h2d_bytes,
        samples=samples,
        pinned=pinned,
        pageable_non_blocking=pageable_non_blocking,
    )


def gpu_step(
    step: int, gap_ms: float = 10.0, data_wait_ms: float = 40.0, wall_ms: float = 100.0
) -> StepRecord:
    """A GPU step whose idle gap was measured; the gap falls in its wait (no loop work measured)."""
    return step_record(
        step,
        wall_ms=wall_ms,
        wait_ms=data_wait_ms,
        copy_ms=0.1,
        gap_ms=gap_ms,
        h2d_bytes=1 << 20,
        pinned=True,
    )


def test_percentile_interpolates_like_numpy() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == pytest.approx(2.5)
    assert percentile([1.0, 2.0, 3.0, 4.0], 95) == pytest.approx(3.85)
    assert percentile([7.0], 95) == 7.0
    assert percentile([], 50) == 0.0


def test_warm_up_steps_do_not_count_and_too_few_steps_give_no_window() -> None:
    just_enough = [cpu_step(i) for i in range(WARMUP_STEPS + MIN_WINDOW_STEPS)]
    assert window_stats(just_enough) is not None
    assert window_stats(just_enough[:-1]) is None
    assert window_stats(just_enough).first_step == WARMUP_STEPS


def test_a_late_viewer_judges_steps_far_past_warm_up() -> None:
    """The ring keeps the last N steps: a viewer started late sees none of the warm-up."""
    stats = window_stats([cpu_step(i) for i in range(5000, 5000 + MIN_WINDOW_STEPS)])
    assert stats is not None and stats.first_step == 5000


def test_the_window_is_the_most_recent_steps() -> None:
    steps = [cpu_step(i, data_wait_ms=90.0) for i in range(200)] + [cpu_step(i) for i in range(200, 400)]
    stats = window_stats(steps)
    assert stats is not None
    assert stats.steps == WINDOW_STEPS and stats.last_step == 399
    assert stats.data_wait_share == pytest.approx(0.30)


def test_without_a_gap_the_host_clock_counts_the_rest_of_the_step_as_the_model() -> None:
    stats = window_stats([cpu_step(i) for i in range(40)])
    assert stats is not None and stats.clock == "cpu"
    assert stats.data_wait_share == pytest.approx(0.30)
    assert stats.copy_share == pytest.approx(0.05)
    assert stats.compute_share == pytest.approx(0.65)
    assert stats.gpu_idle_share is None and stats.idle is None and stats.gpu_idle is None
    assert stats.input_share == pytest.approx(0.30)  # no GPU gap: the host's wait stands in
    assert not stats.partitioned and stats.loop_share == 0.0


def test_the_host_step_is_six_parts_that_add_up_to_its_wall() -> None:
    steps = [
        step_record(
            i,
            wait_ms=10.0,
            loop_pre_ms=15.0,
            copy_ms=5.0,
            model_ms=40.0,
            sync_ms=20.0,
            loop_post_ms=10.0,
            partitioned=True,
            synced=i % 4 != 0,
        )
        for i in range(5, 45)
    ]
    stats = window_stats(steps)
    assert stats is not None
    assert stats.host_parts == pytest.approx(
        {"wait": 0.10, "loop_pre": 0.15, "copy": 0.05, "model": 0.40, "sync": 0.20, "loop_post": 0.10}
    )
    assert sum(stats.host_parts.values()) == pytest.approx(1.0)
    assert stats.compute.p50_ms == pytest.approx(40.0)  # the model's own host time
    assert stats.loop_share == pytest.approx(0.25)  # no gap measured: the host's loop shares
    assert stats.partitioned and stats.synced_step_fraction == pytest.approx(0.75)


def test_partitioned_only_where_most_steps_saw_the_models_calls() -> None:
    half = [step_record(i, model_ms=50.0, partitioned=i % 2 == 0) for i in range(10, 50)]
    assert not window_stats(half).partitioned  # type: ignore[union-attr]
    most = [step_record(i, model_ms=50.0, partitioned=i % 4 != 0) for i in range(10, 50)]
    assert window_stats(most).partitioned  # type: ignore[union-attr]


def test_the_gpu_gap_is_what_the_gpu_felt_of_the_hosts_wait() -> None:
    stats = window_stats([gpu_step(i) for i in range(40)])
    assert stats is not None and stats.clock == "gpu"
    # 10 ms in the wait, and the 0.1 ms copy call of a step whose stream had drained.
    assert stats.idle == IdleShares(wait=pytest.approx(0.10), copy=pytest.approx(0.001))  # type: ignore[arg-type]
    assert stats.gpu_idle_share == pytest.approx(0.101)
    assert stats.input_share == pytest.approx(0.10)  # not the 40% the host waited
    assert stats.data_wait_share == pytest.approx(0.40)
    assert stats.gpu_idle is not None and stats.gpu_idle.p50_ms == pytest.approx(10.0)


def test_a_gap_of_zero_is_a_gpu_that_never_idled_while_the_host_waited() -> None:
    stats = window_stats([gpu_step(i, gap_ms=0.0) for i in range(40)])
    assert stats is not None and stats.clock == "gpu"
    assert stats.gpu_idle_share == 0.0 and stats.input_share == 0.0
    assert stats.data_wait_share == pytest.approx(0.40)


def test_under_watch_alone_copies_unmarked_the_gap_still_judges() -> None:
    """xfertop.watch without copy timing: no loop parts, no copy; the gap is the GPU's all the same."""
    steps = [step_record(i, wall_ms=100.0, wait_ms=40.0, gap_ms=10.0) for i in range(40)]
    stats = window_stats(steps)
    assert stats is not None and stats.clock == "gpu"
    assert stats.input_share == pytest.approx(0.10)
    assert stats.copy_share == 0.0 and stats.compute_share == pytest.approx(0.60)


def test_pending_gaps_leave_their_steps_in_the_window_but_out_of_the_idle() -> None:
    """The newest steps' events resolve later: the window is still the newest steps (the host's parts
    are known at once), and the GPU's idle is read from the steps whose gap is known."""
    resolved = [gpu_step(i) for i in range(40)]
    pending = [cpu_step(i, data_wait_ms=99.0) for i in range(40, 45)]
    clock, window = select_window(resolved + pending)
    assert clock == "gpu"
    assert window[-1].step == 44
    stats = window_stats(resolved + pending)
    assert stats is not None
    assert stats.input_share == pytest.approx(0.10)  # 10 ms in each 100 ms step that has a gap
    assert stats.data_wait_share > 0.40  # the pending steps' waits count on the host's clock


def test_too_few_measured_gaps_fall_back_to_the_host_clock() -> None:
    steps = [cpu_step(i) for i in range(30)] + [gpu_step(i) for i in range(30, 40)]
    clock, window = select_window(steps)
    assert clock == "cpu" and len(window) == 35
    stats = window_stats(steps)
    assert stats is not None and stats.idle is None and stats.input_share == stats.data_wait_share


def test_sampled_gaps_are_read_over_the_rings_history() -> None:
    """Short steps: one step in 8 has its gap measured. The window (the newest 50 steps) holds only 6,
    the ring enough: the idle is the newest 50 gaps', as shares of their own steps' wall."""
    steps = [gpu_step(i, gap_ms=20.0) if i % 8 == 0 else cpu_step(i) for i in range(400)]
    clock, window = select_window(steps)
    assert clock == "gpu" and len(window) == WINDOW_STEPS
    stats = window_stats(steps)
    assert stats is not None
    assert stats.input_share == pytest.approx(0.20)
    assert stats.first_step == 350  # the host's window is the newest steps


# -- where the GPU's idle fell ---------------------------------------------------------------------------
def test_a_gap_is_split_walking_back_from_the_steps_first_work() -> None:
    """The gap ends at the step's first work: its loop work before the model came just before, its wait
    before that, then the step before's loop work after the model, and what is left fell in that step's
    model (the GPU ran out of work while the host still dispatched)."""
    before = step_record(10, wait_ms=1.0, model_ms=30.0, sync_ms=4.0, loop_post_ms=3.0, gap_ms=None)
    step = step_record(11, wait_ms=5.0, loop_pre_ms=2.0, copy_ms=1.0, model_ms=32.0, gap_ms=12.0)
    idle = attribute_idle([before, step], warmup_steps=0)
    assert idle is not None
    wall = step.wall_ms
    assert (idle.loop_pre, idle.wait, idle.loop_post, idle.model) == pytest.approx(
        (2.0 / wall, 5.0 / wall, 3.0 / wall, 2.0 / wall)
    )
    # The stream had drained (gap > 0): the step's copy call was all the GPU had to do meanwhile.
    assert idle.copy == pytest.approx(1.0 / wall)
    assert idle.total == pytest.approx(13.0 / wall)


def test_a_short_gap_falls_in_the_loop_work_right_before_the_first_work() -> None:
    before = step_record(10, model_ms=30.0, loop_post_ms=3.0)
    step = step_record(11, wait_ms=5.0, loop_pre_ms=2.0, model_ms=33.0, gap_ms=1.5)
    idle = attribute_idle([before, step], warmup_steps=0)
    assert idle == IdleShares(loop_pre=pytest.approx(1.5 / 40.0))  # type: ignore[arg-type]


def test_an_iterations_first_step_charges_nothing_to_the_step_before() -> None:
    before = step_record(10, model_ms=30.0, loop_post_ms=3.0)
    step = step_record(11, wait_ms=5.0, model_ms=35.0, gap_ms=9.0, epoch_start=True)
    idle = attribute_idle([before, step], warmup_steps=0)
    assert idle is not None and idle.loop_post == 0.0 and idle.model == 0.0
    assert idle.wait == pytest.approx(5.0 / 40.0)


def test_a_gap_of_zero_charges_no_copy() -> None:
    steps = [step_record(i, wait_ms=5.0, copy_ms=20.0, model_ms=75.0, gap_ms=0.0) for i in range(10, 40)]
    idle = attribute_idle(steps)
    assert idle == IdleShares()
    assert attribute_idle([cpu_step(i) for i in range(10, 40)]) is None


def test_only_the_newest_gaps_count_and_warm_up_steps_never() -> None:
    steps = [gpu_step(i, gap_ms=30.0) for i in range(0, 60)] + [
        gpu_step(i, gap_ms=5.0) for i in range(60, 80)
    ]
    assert attribute_idle(steps, newest=20).wait == pytest.approx(0.05)  # type: ignore[union-attr]
    assert attribute_idle(steps[:5]) is None  # steps 0-4: warm-up


def test_rates_and_spreads() -> None:
    steps = [
        cpu_step(i, wall_ms=50.0, data_wait_ms=float(i % 10), h2d_bytes=1_000_000, samples=64)
        for i in range(5, 105)
    ]
    stats = window_stats(steps, window_steps=100)
    assert stats is not None
    assert stats.samples_per_s == pytest.approx(64 / 0.05)
    assert stats.h2d_bytes_per_s == pytest.approx(20e6)
    assert stats.data_wait.p50_ms == pytest.approx(4.5)
    assert stats.data_wait.p95_ms == pytest.approx(9.0)
    assert stats.wall.p50_ms == pytest.approx(50.0)


def test_pinned_and_pageable_fractions_count_only_steps_that_copied() -> None:
    steps = (
        [cpu_step(i, h2d_bytes=0) for i in range(5, 25)]
        + [cpu_step(i, h2d_bytes=10, pinned=True) for i in range(25, 35)]
        + [cpu_step(i, h2d_bytes=10, pageable_non_blocking=True) for i in range(35, 45)]
    )
    stats = window_stats(steps)
    assert stats is not None
    assert stats.pinned_step_fraction == pytest.approx(0.5)
    assert stats.pageable_non_blocking_step_fraction == pytest.approx(0.5)
    no_copies = window_stats([cpu_step(i) for i in range(30)])
    assert no_copies is not None and no_copies.pinned_step_fraction is None


def test_spikes_show_as_a_few_steps_holding_most_of_the_wait() -> None:
    stats = window_stats(load_window("input_bound_epoch_spikes").ranks[0].steps)
    assert stats is not None
    assert stats.data_wait.p50_ms < 1.0 and stats.data_wait_max_ms > 2000
    assert stats.data_wait_top_share > 0.9


def test_recorded_gpu_window_parts_add_up_to_the_step_and_its_gaps_fall_in_the_wait() -> None:
    stats = window_stats(load_window("input_bound_gpu").ranks[0].steps)
    assert stats is not None and stats.clock == "gpu"
    assert sum(stats.host_parts.values()) == pytest.approx(1.0, abs=1e-6)
    assert stats.idle is not None and 0.30 < stats.gpu_idle_share < 0.45  # type: ignore[operator]
    assert stats.idle.wait > 0.9 * stats.idle.total
    assert stats.data_wait_share > 0.7  # the host waits far longer than the GPU idles


def _select_window_by_filtering(steps, window_steps, min_steps, warmup_steps):  # type: ignore[no-untyped-def]
    """The definition select_window keeps: the newest usable steps of the whole ring; the GPU's side when
    enough of them carry a gap (all of them, in a window shorter than ``min_steps``), or when the ring
    does (sampled gaps)."""
    candidates = [s for s in steps if s.step >= warmup_steps and s.wall_ms > 0]
    recent = candidates[-window_steps:]
    gapped = [s for s in recent if s.gpu_gap_ms is not None]
    timed = [s for s in candidates if s.gpu_gap_ms is not None]
    if (gapped and len(gapped) >= min(min_steps, len(recent))) or len(timed) >= min_steps:
        return "gpu", recent
    return "cpu", recent


@pytest.mark.parametrize("seed", range(40))
def test_the_window_read_newest_first_is_the_window_of_the_whole_ring(seed: int) -> None:
    """select_window stops reading once it has its window; it must pick what filtering the whole ring
    picks: sparse, dense or no measured gaps, warm-up and zero-length steps anywhere, any window sizes."""
    import random

    rng = random.Random(seed)
    timed_share = rng.choice([0.0, 0.02, 0.05, 0.3, 1.0])
    steps = []
    for i in range(rng.randint(0, 1200)):
        step = gpu_step(i) if rng.random() < timed_share else cpu_step(i)
        if rng.random() < 0.02:
            step = cpu_step(i, wall_ms=0.0)
        steps.append(step)
    window_steps, min_steps = rng.choice([(50, 20), (20, 20), (10, 30), (1, 1), (100, 5)])
    warmup_steps = rng.choice([0, 5, 300])
    assert select_window(
        steps, window_steps=window_steps, min_steps=min_steps, warmup_steps=warmup_steps
    ) == _select_window_by_filtering(steps, window_steps, min_steps, warmup_steps)


def test_time_between_a_loaders_iterations_is_measured_and_counts_against_the_rate() -> None:
    # Passes of 10 steps of 10 ms; 300 ms with no step before each pass's first step.
    steps, start_ns = [], 1_000_000_000
    for number in range(WARMUP_STEPS + 40):
        first = number % 10 == 0
        start_ns += 300_000_000 if first and number else 0
        steps.append(
            dataclasses.replace(
                step_record(number, model_ms=10.0, samples=8, epoch_start=first), start_monotonic_ns=start_ns
            )
        )
        start_ns += 10_000_000
    stats = window_stats(steps)
    assert stats is not None
    passes_in_window = sum(1 for s in steps[-stats.steps :] if s.epoch_start)
    between_ms = 300.0 * passes_in_window
    assert stats.between_share == pytest.approx(between_ms / (10.0 * stats.steps + between_ms), abs=1e-6)
    assert stats.samples_per_s == pytest.approx(8 * stats.steps / ((10.0 * stats.steps + between_ms) / 1000))
    # A step that starts no pass has no time between iterations before it, whatever its gap.
    late = dataclasses.replace(
        steps[-1], step=steps[-1].step + 1, epoch_start=False, start_monotonic_ns=start_ns + 5e8
    )
    assert between_iterations_ms(late, steps[-1]) == 0.0
