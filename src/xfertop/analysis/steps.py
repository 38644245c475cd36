"""Rolling-window statistics over a rank's step records: where each step's wall time went.

One clock per window: the GPU clock (copy, compute and idle gap from CUDA events) when enough recent
steps carry it, else the CPU clock (data wait, copy call time, and the rest of the step as compute).
GPU fields are resolved lazily by the reporter, so the newest steps may not have them yet: the GPU
window is the most recent steps that do. The reporter also samples: with short steps only one step in k
(k <= 32) gets the GPU clock, so the GPU window widens by itself to the last ``window_steps`` timed steps
among all the steps the ring holds (1024 by default: at least 32 timed ones).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from xfertop.analysis.thresholds import (
    MIN_WINDOW_STEPS,
    ONE_OFF_STALL_SHARE,
    SPIKE_MAX_STEP_FRACTION,
    WARMUP_STEPS,
    WINDOW_STEPS,
)
from xfertop.model.jobs import StepRecord

Clock = Literal["gpu", "cpu"]


@dataclass(frozen=True)
class Spread:
    """Median and 95th percentile of one per-step duration, in milliseconds."""

    p50_ms: float
    p95_ms: float


@dataclass(frozen=True)
class WindowStats:
    """Where the steps of one window spent their wall time. Shares are fractions of total wall time."""

    clock: Clock
    steps: int
    first_step: int
    last_step: int
    wall_ms_total: float
    wall: Spread
    #: CPU clock, always: time blocked in next(loader).
    data_wait_share: float
    data_wait: Spread
    #: Largest single data wait and the share of all wait held by the few longest waits (spikes).
    data_wait_max_ms: float
    data_wait_top_share: float
    #: Copy on the window's clock (GPU copy time, else host time in the copy call).
    copy_share: float
    copy: Spread
    #: Host time in the copy call, on either clock (large when pageable copies are synchronous).
    copy_cpu_share: float
    #: Compute on the window's clock; on the CPU clock, what is left after data wait and copy.
    compute_share: float
    compute: Spread
    #: GPU clock only: the part of the step the GPU sat idle waiting for the next batch.
    gpu_idle_share: float | None
    gpu_idle: Spread | None
    samples_per_s: float
    h2d_bytes_per_s: float
    #: Of the steps that copied bytes: the fraction whose sources were all pinned, and the fraction
    #: that asked non_blocking of pageable memory. None when no step copied anything.
    pinned_step_fraction: float | None
    pageable_non_blocking_step_fraction: float | None
    #: Steps that made or marked a copy (or moved bytes), as a fraction of the window.
    copied_step_fraction: float = 0.0
    #: Steps whose iter(loader) started the loader's workers (an epoch start without persistent_workers),
    #: and the share of the window's data wait that fell in them.
    worker_start_steps: int = 0
    worker_start_wait_share: float = 0.0
    #: Judged on fewer steps than a confident verdict needs (EARLY_MIN_STEPS <= steps < MIN_WINDOW_STEPS).
    early: bool = False
    #: Shares of py-spy samples, not of timed steps (`xfertop attach`): ``steps`` counts samples, and
    #: ``worker_start_steps`` the workers that ended during the window while the job ran on.
    sampled: bool = False
    #: The window's longest data wait of a step that starts no iteration (ms), and how many other such
    #: steps of the whole history given (the ring) waited at least half as long: 0 for a one-off stall.
    stall_wait_ms: float = 0.0
    stall_repeats: int = 0
    #: Steps in which torch.save ran (`xfertop run`), and their wall beyond a typical (median) step as a
    #: share of the window: what checkpointing cost it.
    checkpoint_steps: int = 0
    checkpoint_share: float = 0.0

    @property
    def input_share(self) -> float:
        """What the GPU (or, without GPU timing, the training loop) lost waiting for data."""
        return self.gpu_idle_share if self.gpu_idle_share is not None else self.data_wait_share

    @property
    def gpu_busy_share(self) -> float | None:
        """GPU clock only: copy plus compute as a share of the step."""
        return self.copy_share + self.compute_share if self.clock == "gpu" else None


def usable_steps(steps: Sequence[StepRecord], warmup_steps: int = WARMUP_STEPS) -> list[StepRecord]:
    """Steps past warm-up with a positive wall time, oldest first."""
    return [s for s in steps if s.step >= warmup_steps and s.wall_ms > 0]


def select_window(
    steps: Sequence[StepRecord],
    *,
    window_steps: int = WINDOW_STEPS,
    min_steps: int = MIN_WINDOW_STEPS,
    warmup_steps: int = WARMUP_STEPS,
) -> tuple[Clock, list[StepRecord]]:
    """The clock to judge by and the most recent steps on it (possibly fewer than ``min_steps``)."""
    # A step has the GPU clock when it has compute and idle time; copy_gpu_ms is None when nothing marked
    # a copy (watch() alone, `xfertop run` without --copy-timing): the copy then sits inside compute, and
    # the idle gap is still the GPU's own. The newest steps usually all have it, and then they are the
    # window: no pass over the whole ring (1024 steps) on every repaint of every rank.
    newest = steps[-max(window_steps, min_steps) :]
    if len(newest) >= min_steps and all(
        s.step >= warmup_steps
        and s.wall_ms > 0
        and s.compute_gpu_ms is not None
        and s.gpu_idle_ms is not None
        for s in newest
    ):
        return "gpu", list(newest[-window_steps:])
    timed = [
        s
        for s in steps
        if s.gpu_idle_ms is not None
        and s.compute_gpu_ms is not None
        and s.step >= warmup_steps
        and s.wall_ms > 0
    ]
    if len(timed) >= min_steps:
        return "gpu", timed[-window_steps:]
    # The CPU clock's window: the newest usable steps, read newest first until there are enough.
    recent: list[StepRecord] = []
    for step in reversed(steps):
        if step.step >= warmup_steps and step.wall_ms > 0:
            recent.append(step)
            if len(recent) == window_steps:
                break
    recent.reverse()
    return "cpu", recent


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default), ``q`` in [0, 100]; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _spread(values: Sequence[float]) -> Spread:
    return Spread(p50_ms=percentile(values, 50), p95_ms=percentile(values, 95))


def _share(part_ms: float, total_ms: float) -> float:
    return part_ms / total_ms if total_ms > 0 else 0.0


def _top_share(values: Sequence[float], max_fraction: float) -> float:
    """Share of the total held by the largest ``max_fraction`` of the values (at least one)."""
    total = sum(values)
    if total <= 0:
        return 0.0
    count = max(1, int(len(values) * max_fraction))
    return sum(sorted(values, reverse=True)[:count]) / total


def window_stats(
    steps: Sequence[StepRecord],
    *,
    window_steps: int = WINDOW_STEPS,
    min_steps: int = MIN_WINDOW_STEPS,
    warmup_steps: int = WARMUP_STEPS,
    spike_step_fraction: float = SPIKE_MAX_STEP_FRACTION,
) -> WindowStats | None:
    """Statistics of the most recent window, or None when fewer than ``min_steps`` are usable."""
    clock, window = select_window(
        steps, window_steps=window_steps, min_steps=min_steps, warmup_steps=warmup_steps
    )
    if len(window) < min_steps:
        return None
    wall = [s.wall_ms for s in window]
    wall_total_ms = sum(wall)
    wait = [s.data_wait_ms for s in window]
    copy_cpu = [s.copy_cpu_ms for s in window]
    idle: list[float] | None = None
    if clock == "gpu":
        copy = [float(s.copy_gpu_ms or 0.0) for s in window]
        compute = [float(s.compute_gpu_ms or 0.0) for s in window]
        idle = [float(s.gpu_idle_ms or 0.0) for s in window]
    else:
        copy = copy_cpu
        # Without a GPU the host computes synchronously: the rest of the step is compute.
        compute = [max(0.0, s.wall_ms - s.data_wait_ms - s.copy_cpu_ms) for s in window]
    copying = [s for s in window if s.h2d_bytes > 0]
    wall_total_s = wall_total_ms / 1000.0
    wait_total_ms = sum(wait)
    worker_starts = [s for s in window if s.workers_started]
    stall = max((s for s in window if not s.epoch_start), key=lambda s: s.data_wait_ms, default=None)
    stall_ms = stall.data_wait_ms if stall is not None else 0.0
    repeats = 0
    if stall_ms > 0 and stall_ms >= ONE_OFF_STALL_SHARE * wait_total_ms:
        # Only a stall that could be a one-off is looked for in the whole history (up to a ring of steps).
        repeats = sum(
            1
            for s in steps
            if s is not stall
            and s.step >= warmup_steps
            and not s.epoch_start
            and s.wall_ms > 0
            and s.data_wait_ms >= stall_ms / 2
        )
    saving = [s for s in window if s.checkpoint]
    typical_wall = statistics.median(wall)
    checkpoint_ms = sum(max(0.0, s.wall_ms - typical_wall) for s in saving)
    return WindowStats(
        clock=clock,
        steps=len(window),
        first_step=window[0].step,
        last_step=window[-1].step,
        wall_ms_total=wall_total_ms,
        wall=_spread(wall),
        data_wait_share=_share(sum(wait), wall_total_ms),
        data_wait=_spread(wait),
        data_wait_max_ms=max(wait),
        data_wait_top_share=_top_share(wait, spike_step_fraction),
        copy_share=_share(sum(copy), wall_total_ms),
        copy=_spread(copy),
        copy_cpu_share=_share(sum(copy_cpu), wall_total_ms),
        compute_share=_share(sum(compute), wall_total_ms),
        compute=_spread(compute),
        gpu_idle_share=_share(sum(idle), wall_total_ms) if idle is not None else None,
        gpu_idle=_spread(idle) if idle is not None else None,
        samples_per_s=sum(s.samples for s in window) / wall_total_s if wall_total_s > 0 else 0.0,
        h2d_bytes_per_s=sum(s.h2d_bytes for s in window) / wall_total_s if wall_total_s > 0 else 0.0,
        pinned_step_fraction=(sum(s.pinned for s in copying) / len(copying)) if copying else None,
        pageable_non_blocking_step_fraction=(
            sum(s.pageable_non_blocking for s in copying) / len(copying) if copying else None
        ),
        copied_step_fraction=sum(1 for s in window if s.copied or s.h2d_bytes > 0) / len(window),
        worker_start_steps=len(worker_starts),
        worker_start_wait_share=_share(sum(s.data_wait_ms for s in worker_starts), wait_total_ms),
        early=len(window) < MIN_WINDOW_STEPS,
        stall_wait_ms=stall_ms,
        stall_repeats=repeats,
        checkpoint_steps=len(saving),
        checkpoint_share=_share(checkpoint_ms, wall_total_ms),
    )
