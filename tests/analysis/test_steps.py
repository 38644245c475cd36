"""Window statistics: which steps count, which clock is used, and where each step's time went."""

from __future__ import annotations

import pytest
from window_fixtures import load_window

from xfertop.analysis.steps import percentile, select_window, window_stats
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
    return StepRecord(
        step,
        wall_ms,
        data_wait_ms,
        copy_cpu_ms,
        None,
        None,
        None,
        h2d_bytes,
        samples,
        pinned,
        pageable_non_blocking,
    )


def gpu_step(
    step: int,
    idle_ms: float = 10.0,
    copy_ms: float = 5.0,
    compute_ms: float = 85.0,
    data_wait_ms: float = 40.0,
) -> StepRecord:
    return StepRecord(
        step,
        idle_ms + copy_ms + compute_ms,
        data_wait_ms,
        0.1,
        copy_ms,
        compute_ms,
        idle_ms,
        1 << 20,
        64,
        True,
        False,
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


def test_cpu_clock_counts_the_rest_of_the_step_as_compute() -> None:
    stats = window_stats([cpu_step(i) for i in range(40)])
    assert stats is not None and stats.clock == "cpu"
    assert stats.data_wait_share == pytest.approx(0.30)
    assert stats.copy_share == pytest.approx(0.05)
    assert stats.compute_share == pytest.approx(0.65)
    assert stats.gpu_idle_share is None and stats.gpu_busy_share is None
    assert stats.input_share == pytest.approx(0.30)  # no GPU clock: the CPU wait stands in


def test_gpu_clock_is_used_when_steps_carry_it_and_the_idle_gap_is_what_the_gpu_felt() -> None:
    stats = window_stats([gpu_step(i) for i in range(40)])
    assert stats is not None and stats.clock == "gpu"
    assert stats.gpu_idle_share == pytest.approx(0.10)
    assert stats.input_share == pytest.approx(0.10)  # not the 40% the CPU waited
    assert stats.data_wait_share == pytest.approx(0.40)
    assert stats.copy_share == pytest.approx(0.05)
    assert stats.gpu_busy_share == pytest.approx(0.90)


def test_gpu_clock_without_a_marked_copy_still_judges_by_the_idle_gap() -> None:
    """watch() alone or `xfertop run` without --copy-timing: no copied event, the copy sits in compute."""
    from dataclasses import replace

    stats = window_stats([replace(gpu_step(i), copy_gpu_ms=None) for i in range(40)])
    assert stats is not None and stats.clock == "gpu"
    assert stats.input_share == pytest.approx(0.10)  # the GPU's idle gap, not the 40% CPU wait
    assert stats.copy_share == pytest.approx(0.0)


def test_pending_gpu_steps_are_left_out_of_the_gpu_window() -> None:
    """The newest steps' CUDA events resolve later: judge by the steps that have them."""
    resolved = [gpu_step(i) for i in range(40)]
    pending = [cpu_step(i, data_wait_ms=99.0) for i in range(40, 45)]
    clock, window = select_window(resolved + pending)
    assert clock == "gpu"
    assert window[-1].step == 39


def test_too_few_resolved_gpu_steps_fall_back_to_the_cpu_clock() -> None:
    steps = [cpu_step(i) for i in range(30)] + [gpu_step(i) for i in range(30, 40)]
    clock, window = select_window(steps)
    assert clock == "cpu" and len(window) == 35


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


def test_recorded_gpu_window_shares_add_up_to_the_step() -> None:
    stats = window_stats(load_window("input_bound_gpu").ranks[0].steps)
    assert stats is not None and stats.clock == "gpu"
    assert stats.gpu_idle_share + stats.copy_share + stats.compute_share == pytest.approx(1.0, abs=1e-6)
    assert 0.30 < stats.gpu_idle_share < 0.45


def _select_window_by_filtering(steps, window_steps, min_steps, warmup_steps):  # type: ignore[no-untyped-def]
    """The definition select_window keeps: filter the whole ring, then take the newest steps."""
    candidates = [s for s in steps if s.step >= warmup_steps and s.wall_ms > 0]
    timed = [s for s in candidates if s.compute_gpu_ms is not None and s.gpu_idle_ms is not None]
    if len(timed) >= min_steps:
        return "gpu", timed[-window_steps:]
    return "cpu", candidates[-window_steps:]


@pytest.mark.parametrize("seed", range(40))
def test_the_window_read_newest_first_is_the_window_of_the_whole_ring(seed: int) -> None:
    """select_window stops reading once it has its GPU window; it must pick what filtering the whole ring
    picks: sparse, dense or no GPU timing, warm-up and zero-length steps anywhere, any window sizes."""
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
