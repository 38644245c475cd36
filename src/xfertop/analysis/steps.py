"""Rolling-window statistics over a rank's step records: where each step's wall time went.

Two clocks, never mixed:
- the host's: each step's wall in six parts that add up to it (wait in next(), the loop's own work
  before the model, copies, the model, syncs, the loop's own work after it);
- the GPU's own idle gap before each step's first work, where the reporter measured it (events across
  which work was queued: see reporter/_gpu_timer.py). Each gap is attributed to what the host was doing
  meanwhile, walking back from the step's first work: its loop work before the model, its wait, the step
  before's loop work after the model, and what is left to the model before that. A step whose stream had
  drained also idles the GPU's kernels through its synchronous copy calls.
The reporter measures one gap in k steps when steps are short, so the GPU side of a window is the most
recent ``window_steps`` steps that carry a gap, among all the steps the ring holds.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from xfertop.analysis.thresholds import (
    MIN_WINDOW_STEPS,
    ONE_OFF_STALL_SHARE,
    PERIODIC_WINDOW_MAX_STEPS,
    SPIKE_MAX_STEP_FRACTION,
    WARMUP_STEPS,
    WINDOW_STEPS,
)
from xfertop.model.jobs import StepRecord

_NS_PER_MS = 1e6

Clock = Literal["gpu", "cpu"]


@dataclass(frozen=True)
class Spread:
    """Median and 95th percentile of one per-step duration, in milliseconds."""

    p50_ms: float
    p95_ms: float


@dataclass(frozen=True)
class IdleShares:
    """The GPU's measured idle time, by what the host was doing meanwhile: shares of the wall."""

    wait: float = 0.0
    loop_pre: float = 0.0
    copy: float = 0.0
    loop_post: float = 0.0
    #: Before the step before's model had finished on the host: the GPU ran out of work mid-dispatch.
    model: float = 0.0

    @property
    def total(self) -> float:
        return self.wait + self.loop_pre + self.copy + self.loop_post + self.model


def split_gap(step: StepRecord, previous: StepRecord | None) -> IdleShares:
    """One step's measured GPU gap in milliseconds, split over what the host did while it lasted (see
    the module docstring): an ``IdleShares`` of ms, not of shares. A gap longer than the host's parts
    explain (time that was no step's: between epochs, a checkpoint outside the loop) is left out, so no
    share of the steps' wall ever exceeds it. ``previous``: the step before, if it is the one just before
    and this step does not start an epoch."""
    return IdleShares(*_gap_parts_ms(step, previous))


def _gap_parts_ms(step: StepRecord, previous: StepRecord | None) -> tuple[float, float, float, float, float]:
    """split_gap's figures as a tuple in IdleShares' order: attribute_idle sums them for each of up to
    hundreds of steps at every repaint, where building an IdleShares each was most of its time."""
    gap = step.gpu_gap_ms or 0.0
    pre = min(gap, step.loop_pre_ms)
    left = gap - pre
    wait = min(left, step.data_wait_ms)
    left -= wait
    post = model = 0.0
    if previous is not None and previous.step == step.step - 1 and not step.epoch_start:
        post = min(left, previous.loop_post_ms)
        left -= post
        if previous.nested_pass:
            # A pass over another loader ran after the step before's model: its waits for that loader
            # (most of that step's data wait) fell between its model and its end, with the pass's work.
            passed = min(left, previous.data_wait_ms)
            wait += passed
            left -= passed
        model = min(left, previous.model_ms + previous.sync_ms)
    # The stream had drained: its copy calls were all the GPU had to do.
    copy = step.copy_cpu_ms if gap > 0 else 0.0
    return wait, pre, copy, post, model


def attribute_idle(
    steps: Sequence[StepRecord],
    *,
    newest: int = WINDOW_STEPS,
    warmup_steps: int = WARMUP_STEPS,
    first_step: int = 0,
    last_step: int | None = None,
) -> IdleShares | None:
    """The ``newest`` measured gaps of ``steps`` (oldest first; of those numbered ``first_step`` to
    ``last_step`` where given), each split over what the host did while it lasted (``split_gap``), as
    shares of the wall of the steps that carry them; None when no step carries one."""
    wall = wait = pre = copy = post = model = 0.0
    counted = 0
    for index in range(len(steps) - 1, -1, -1):
        step = steps[index]
        if last_step is not None and step.step > last_step:
            continue
        if step.step < first_step:
            break
        if step.gpu_gap_ms is None or step.step < warmup_steps or step.wall_ms <= 0 or step.probe_replay:
            continue
        wall += step.wall_ms
        step_wait, step_pre, step_copy, step_post, step_model = _gap_parts_ms(
            step, steps[index - 1] if index else None
        )
        wait += step_wait
        pre += step_pre
        copy += step_copy
        post += step_post
        model += step_model
        counted += 1
        if counted == newest:
            break
    if wall <= 0:
        return None
    return IdleShares(wait / wall, pre / wall, copy / wall, post / wall, model / wall)


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
    #: Host time in the copy calls (large when copies from pageable memory are synchronous).
    copy_share: float
    copy: Spread
    #: The same (kept for the faces that name it so).
    copy_cpu_share: float
    #: The model on the host: forward, backward and optimizer step (what is left of the wall).
    compute_share: float
    compute: Spread
    #: GPU clock only: the GPU's measured idle gaps between steps' work, as a share of the wall.
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
    #: Steps that began an iteration over a loader (iter(loader): an epoch, a validation pass). Most of a
    #: window's steps beginning one: a loop that makes a new iterator every step (``next(iter(loader))``).
    iteration_start_steps: int = 0
    #: ... and the share of the window's data wait that fell in them (the first batch of each epoch, with
    #: persistent workers too: theirs is only asked for when the epoch begins).
    iteration_start_wait_share: float = 0.0
    #: Steps from one iteration's start to the next, where the window holds two or more (0: not known).
    iteration_every: float = 0.0
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
    #: Steps inside which the loop made a pass over another loader (validation every N steps; `xfertop
    #: run`), and their wall beyond a typical step as a share of the window: what the passes cost it.
    nested_pass_steps: int = 0
    nested_pass_share: float = 0.0
    #: ... of which waits for the pass's loader (its workers starting, say) and the pass's own work (the
    #: loop's after the model), each beyond a typical step's.
    nested_pass_wait_share: float = 0.0
    nested_pass_work_share: float = 0.0
    #: Passes whose GPU idle was measured: the step after them carries a gap.
    nested_pass_timed_steps: int = 0
    #: Steps from one pass to the next, about (0: no pass in the window; _pass_period).
    nested_pass_every: float = 0.0
    #: The loop's own work before the model and after it, and syncs: host shares of the wall.
    loop_pre_share: float = 0.0
    sync_share: float = 0.0
    loop_post_share: float = 0.0
    #: Most steps had their model's calls seen (`xfertop run`): the loop's own work is measured.
    partitioned: bool = False
    #: Steps that synced with the device, as a fraction of the window.
    synced_step_fraction: float = 0.0
    #: Steps in which an optimizer (torch.optim) stepped, as a fraction of the window (0 where not seen:
    #: rings written before the flag, `xfertop.watch(instrument=False)`, py-spy's windows).
    optimizer_step_fraction: float = 0.0
    #: GPU clock only: where its measured idle fell, by what the host was doing (shares of the wall).
    idle: IdleShares | None = None
    #: Time between a loader's iterations where no step ran (the code after each epoch: evaluation,
    #: checkpoints, a sleep), as a share of the window's steps' wall plus that time.
    between_share: float = 0.0
    #: num_workers of the loader whose steps waited longest in the window (training with 8 workers, a
    #: validation pass with none): None where no step says which loader it came from.
    waiting_loader_workers: int | None = None
    #: Samples a step's batch held, on average over the window (0: not counted, as for batches whose
    #: first leaf has no length, and for py-spy's windows).
    samples_per_step: float = 0.0

    @property
    def nested_pass_period(self) -> int:
        """Steps per nested pass, about (0: none)."""
        return round(self.nested_pass_every)

    @property
    def input_share(self) -> float:
        """What the GPU (or, without GPU timing, the training loop) lost waiting for data."""
        return self.idle.wait if self.idle is not None else self.data_wait_share

    @property
    def loop_share(self) -> float:
        """What the GPU (or, without GPU timing, the loop) lost to the loop's own work."""
        if self.idle is not None:
            return self.idle.loop_pre + self.idle.loop_post
        return self.loop_pre_share + self.loop_post_share

    @property
    def host_parts(self) -> dict[str, float]:
        """The host's step in its six parts (shares of the wall that add up to 1)."""
        return {
            "wait": self.data_wait_share,
            "loop_pre": self.loop_pre_share,
            "copy": self.copy_share,
            "model": self.compute_share,
            "sync": self.sync_share,
            "loop_post": self.loop_post_share,
        }


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
    """The most recent usable steps (possibly fewer than ``min_steps``; whole periods of the loop's
    periodic work where it has some: ``whole_periods``) and whether enough of them carry the GPU's
    measured gap ("gpu") to attribute its idle time, else "cpu" (the host's clock alone)."""

    recent = _newest_usable(steps, PERIODIC_WINDOW_MAX_STEPS, warmup_steps)
    # Where a period of the loop's periodic work ends (newest first): a step holding work the loop does
    # every N steps (a validation pass, a checkpoint); else a step that began an iteration over its
    # loader (an epoch's first batch; not a pass's, inside a training step).
    starts = [index for index, step in enumerate(recent) if step.epoch_start and not step.nested_pass]
    recent = next(
        (
            window
            for marks in (*_periodic_marks(recent), starts)
            if (window := whole_periods(recent, window_steps, marks))
        ),
        recent[:window_steps],
    )
    recent.reverse()
    gapped = sum(1 for s in recent if s.gpu_gap_ms is not None)
    if gapped >= min(min_steps, len(recent)) and gapped:
        return "gpu", recent
    # Sampled gaps (one step in k): the window is wide enough when the ring's history holds enough.
    timed = sum(
        1
        for s in steps
        if s.gpu_gap_ms is not None and s.step >= warmup_steps and s.wall_ms > 0 and not s.probe_replay
    )
    return ("gpu" if timed >= min_steps else "cpu"), recent


def _periodic_marks(newest_first: Sequence[StepRecord]) -> tuple[list[int], ...]:
    """The steps that end a period of the loop's periodic work, to try in turn: those holding both a
    validation pass and a checkpoint where the job does both (whole periods of each: a job validating
    every 40 steps and saving every 60 read its passes "about every 30 steps" and 17% of the time, not
    13%, over a window from one save to the one before), then the passes', then the checkpoints'."""
    passes = [index for index, step in enumerate(newest_first) if step.nested_pass]
    saves = [index for index, step in enumerate(newest_first) if step.checkpoint]
    if not (passes and saves):
        return (passes or saves,)
    both = sorted(set(passes).intersection(saves))
    return both, passes, saves


def _newest_usable(steps: Sequence[StepRecord], count: int, warmup_steps: int) -> list[StepRecord]:
    """The newest ``count`` steps past warm-up, timed, and the job's own batches (not replays), newest
    first. Tried first on the newest ``count`` steps (where nearly all are usable), then on all: the
    analysis runs at each repaint, and one call per step made this a third of its time."""

    def newest_first(reach: int) -> list[StepRecord]:
        return [
            step
            for step in itertools.islice(reversed(steps), reach)
            if step.step >= warmup_steps and step.wall_ms > 0 and not step.probe_replay
        ]

    usable = newest_first(count)
    if len(usable) < count < len(steps):
        usable = newest_first(len(steps))
    return usable[:count]


def whole_periods(
    newest_first: Sequence[StepRecord], window_steps: int, marks: Sequence[int]
) -> list[StepRecord] | None:
    """The steps of whole periods of the loop's periodic work (``marks``: the indices in ``newest_first`` of
    the steps that hold it; select_window also tries epochs where there is none), newest first: from just
    after one such step through the newest such step (the steps after it wait for the next period), at least
    ``window_steps`` steps and two periods. A window of the last 50 steps held one validation pass of a job
    that validated every 50 steps, two or none of one whose 128-step epochs held passes at 50 and 100: its
    verdict flipped between loop-bound and compute-bound by the window's phase (session 30's Lightning job).
    Epochs do the same where each one's first batch waits: session 33's j83 (64-step epochs, persistent
    workers) read compute-bound, healthy and launch-bound in turn on the H100 as 50-step windows held an epoch
    start or not. None where the steps after the newest such step outlast its period (the job stopped doing
    it), or where too few are within reach."""
    if len(marks) < 3:
        return None
    for k in range(2, len(marks)):
        if marks[k] - marks[0] >= window_steps:
            break
    else:
        return None
    longest_period = max(b - a for a, b in itertools.pairwise(marks[: k + 1]))
    if marks[0] > longest_period:  # the steps since the newest outlast a period: it is not coming back
        return None
    return list(newest_first[marks[0] : marks[k]])


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


def _longest_stall(
    steps: Sequence[StepRecord], window: Sequence[StepRecord], wait_total_ms: float, warmup_steps: int
) -> tuple[float, int]:
    """The window's longest data wait of a step that starts no iteration (ms), and how many other such
    steps of the whole history waited at least half as long (only counted for a stall that holds enough
    of the window's wait to be a one-off worth leaving out)."""
    stall = max((s for s in window if not s.epoch_start), key=lambda s: s.data_wait_ms, default=None)
    stall_ms = stall.data_wait_ms if stall is not None else 0.0
    if stall_ms <= 0 or stall_ms < ONE_OFF_STALL_SHARE * wait_total_ms:
        return stall_ms, 0
    repeats = sum(
        1
        for s in steps
        if s is not stall
        and s.step >= warmup_steps
        and not s.epoch_start
        and s.wall_ms > 0
        and s.data_wait_ms >= stall_ms / 2
    )
    return stall_ms, repeats


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
    copy = [s.copy_cpu_ms for s in window]
    model = [s.model_ms for s in window]
    idle = None
    if clock == "gpu":
        # The window's own gaps where it holds enough (a window of whole periods may be longer than
        # ``window_steps``), else the newest measured ones up to its end (one step in k is timed).
        gapped = sum(1 for s in window if s.gpu_gap_ms is not None)
        first = window[0].step if gapped >= min_steps else 0
        idle = attribute_idle(
            steps,
            newest=max(window_steps, gapped),
            warmup_steps=warmup_steps,
            first_step=first,
            last_step=window[-1].step,
        )
    gaps = [s.gpu_gap_ms for s in window if s.gpu_gap_ms is not None]
    copying = [s for s in window if s.h2d_bytes > 0]
    wall_total_s = wall_total_ms / 1000.0
    wait_total_ms = sum(wait)
    worker_starts = [s for s in window if s.workers_started]
    starts = [s for s in window if s.epoch_start]
    stall_ms, repeats = _longest_stall(steps, window, wait_total_ms, warmup_steps)
    saving = [s for s in window if s.checkpoint]
    # The time before each iteration's first step, the window's first included (the step before it is in
    # the history): a reader of Prometheus counters, which carry it per step, counts the same.
    before_first = next((i for i in range(len(steps) - 1, -1, -1) if steps[i] is window[0]), 0)
    previous = steps[before_first - 1] if before_first > 0 else None
    between_ms = between_iterations_ms(window[0], previous) + sum(
        map(between_iterations_ms, window[1:], window)
    )
    elapsed_s = wall_total_s + between_ms / 1000
    typical_wall = statistics.median(wall)
    before = steps[max(0, before_first - len(window)) : before_first]
    parts = _periodic_parts(typical_wall, [*before, *window])
    # Only a job that runs work on a GPU has a queue of it for the host to refill after a special step.
    queues = any(s.gpu_gap_ms is not None or s.h2d_bytes > 0 for s in itertools.chain(before, window))
    checkpoint_ms, _ = _cost_beyond(
        typical_wall, before, window, lambda s: parts(s)[1], _timed_on_the_gpu, queues
    )
    passes = [s for s in window if s.nested_pass]
    passes_ms, refilled_ms = _cost_beyond(
        typical_wall, before, window, lambda s: parts(s)[0], _timed_on_the_gpu, queues
    )
    pass_waits_ms = _beyond(statistics.median(wait), (s.data_wait_ms for s in passes))
    typical_post = statistics.median(s.loop_post_ms for s in window)
    # The queued work a pass's sync waited for was in its work after the model (its `float(correct)`).
    pass_work_ms = max(0.0, _beyond(typical_post, (s.loop_post_ms for s in passes)) - refilled_ms)
    # The GPU's idle through a pass is in the gap of the step after it, where that step was timed.
    after_pass = {s.step + 1 for s in passes}
    passes_timed = sum(1 for s in window if s.step in after_pass and s.gpu_gap_ms is not None)
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
        copy_cpu_share=_share(sum(copy), wall_total_ms),
        compute_share=_share(sum(model), wall_total_ms),
        compute=_spread(model),
        gpu_idle_share=idle.total if idle is not None else None,
        gpu_idle=_spread(gaps) if idle is not None and gaps else None,
        # The job's rate: the time between iterations counts (a step's own pace would hide it).
        samples_per_s=sum(s.samples for s in window) / elapsed_s if elapsed_s > 0 else 0.0,
        h2d_bytes_per_s=sum(s.h2d_bytes for s in window) / wall_total_s if wall_total_s > 0 else 0.0,
        pinned_step_fraction=(sum(s.pinned for s in copying) / len(copying)) if copying else None,
        pageable_non_blocking_step_fraction=(
            sum(s.pageable_non_blocking for s in copying) / len(copying) if copying else None
        ),
        copied_step_fraction=sum(1 for s in window if s.copied or s.h2d_bytes > 0) / len(window),
        worker_start_steps=len(worker_starts),
        worker_start_wait_share=_share(sum(s.data_wait_ms for s in worker_starts), wait_total_ms),
        iteration_start_steps=len(starts),
        iteration_start_wait_share=_share(sum(s.data_wait_ms for s in starts), wait_total_ms),
        iteration_every=(starts[-1].step - starts[0].step) / (len(starts) - 1) if len(starts) > 1 else 0.0,
        early=len(window) < MIN_WINDOW_STEPS,
        stall_wait_ms=stall_ms,
        stall_repeats=repeats,
        checkpoint_steps=len(saving),
        checkpoint_share=_share(checkpoint_ms, wall_total_ms),
        nested_pass_steps=len(passes),
        nested_pass_share=_share(passes_ms, wall_total_ms),
        nested_pass_wait_share=_share(pass_waits_ms, wall_total_ms),
        nested_pass_work_share=_share(pass_work_ms, wall_total_ms),
        nested_pass_timed_steps=passes_timed,
        nested_pass_every=_pass_period(window, passes),
        loop_pre_share=_share(sum(s.loop_pre_ms for s in window), wall_total_ms),
        sync_share=_share(sum(s.sync_ms for s in window), wall_total_ms),
        loop_post_share=_share(sum(s.loop_post_ms for s in window), wall_total_ms),
        partitioned=sum(s.partitioned for s in window) * 2 > len(window),
        synced_step_fraction=sum(s.synced for s in window) / len(window),
        optimizer_step_fraction=sum(s.optimizer_stepped for s in window) / len(window),
        idle=idle,
        waiting_loader_workers=_waiting_loader_workers(window),
        between_share=_share(between_ms, wall_total_ms + between_ms),
        samples_per_step=sum(s.samples for s in window) / len(window),
    )


def _pass_period(window: Sequence[StepRecord], passes: Sequence[StepRecord]) -> float:
    """Steps from one nested pass to the next, about: the window's steps per pass where it is whole periods
    (whole_periods ends it at a pass; a Lightning job's passes at 50 and 100 of each 128-step epoch are
    every 64), else the passes' mean spacing (a window of the last 50 steps held 2 passes every 16 and
    read "about every 26")."""
    if not passes:
        return 0.0
    if window[-1].nested_pass or len(passes) < 2:
        return len(window) / len(passes)
    return (passes[-1].step - passes[0].step) / (len(passes) - 1)


def _beyond(typical: float, values: Iterable[float]) -> float:
    """What ``values`` hold beyond ``typical`` each, summed: what a window's special steps cost it."""
    return sum(max(0.0, value - typical) for value in values)


def _periodic_parts(
    typical: float, steps: Sequence[StepRecord]
) -> Callable[[StepRecord], tuple[float, float]]:
    """How much of a step's wall beyond ``typical`` is its validation pass's and how much its
    checkpoint's: all of it the one's it holds (none of either for a step holding neither). A step holding
    both (validating every 40 steps and saving every 60, both fall due every 120) has one wall for the two:
    where ``steps`` hold passes or checkpoints alone, it is split by their median costs alone (a checkpoint
    whose lone steps cost 30 ms beyond a typical one takes 30 ms of it, the pass the rest; with both kinds
    seen alone, in their ratio). Where neither is seen alone (saving after each validation) they cannot be
    told apart: each is given the whole, as each ran in that step."""
    alone_pass = [_lone_cost(s, typical) for s in steps if s.nested_pass and not s.checkpoint]
    alone_save = [_lone_cost(s, typical) for s in steps if s.checkpoint and not s.nested_pass]
    pass_cost = max(0.0, statistics.median(alone_pass)) if alone_pass else None
    save_cost = max(0.0, statistics.median(alone_save)) if alone_save else None

    def parts(step: StepRecord) -> tuple[float, float]:
        if not (step.nested_pass and step.checkpoint):
            return float(step.nested_pass), float(step.checkpoint)
        excess = step.wall_ms - typical
        if pass_cost is None and save_cost is None:
            return 1.0, 1.0
        if pass_cost is not None and save_cost is not None:
            both = pass_cost + save_cost
            return (pass_cost / both, save_cost / both) if both > 0 else (0.5, 0.5)
        if excess <= 0.0:
            return 0.5, 0.5
        known = min(1.0, (pass_cost if pass_cost is not None else save_cost or 0.0) / excess)
        return (known, 1.0 - known) if pass_cost is not None else (1.0 - known, known)

    return parts


def _timed_on_the_gpu(step: StepRecord) -> float | None:
    """The step's pass or checkpoint on the GPU's own clock, where the reporter timed it (a step holding
    one kind of the two; StepRecord.periodic_gpu_ms)."""
    return step.periodic_gpu_ms


def _lone_cost(step: StepRecord, typical: float) -> float:
    """What a step holding one kind of periodic work paid for it: its time on the GPU's clock where
    measured, else its wall beyond ``typical``."""
    timed = _timed_on_the_gpu(step)
    return timed if timed is not None else step.wall_ms - typical


def _cost_beyond(
    typical: float,
    before: Sequence[StepRecord],
    window: Sequence[StepRecord],
    part: Callable[[StepRecord], float],
    measured: Callable[[StepRecord], float | None],
    queues: bool,
) -> tuple[float, float]:
    """What the window's special steps (a pass over another loader, a checkpoint) cost it: their walls
    beyond ``typical`` each (``part`` of it: the share that is this kind's, 0 for a step of another kind
    or none; _pass_part), less what the steps right after each ran short of it; and that shortfall.

    A sync in a special step (`float(correct)` at a validation pass's end, torch.save copying the weights
    to the host) waits for the GPU work the host had queued ahead of it: the training steps' kernels, which
    a synchronised run books to those steps. The special step's wall then holds them, and the steps after
    it run short of the typical pace while the host fills the queue again (session 41's k on an H100: its
    passes read 42-56% of the time beyond a typical step, its synchronised truth 13%). What ran short is
    counted back, up to each special step's own excess; on a GPU the host does not run ahead of, the steps
    after it keep their pace and nothing is counted back. ``queues``: the window's steps show GPU work
    (the GPU's clock, copies to the device); without it there is no queue to refill and nothing is
    counted back: a CPU job's steps vary by themselves, and the short ones after a checkpoint took a
    third off its cost (session 50's trial: torch.save read 16% of the time, its timers 24%, model steps
    of 46-96 ms). ``before``: the steps before the
    window, whose last special step's shortfall may run into it (a window of whole periods starts right
    after a pass, and ends at one whose shortfall it does not hold).

    ``measured``: what a special step's work took on the GPU's own clock, where the reporter timed it
    (StepRecord.periodic_gpu_ms): that is its cost, the queue it drained left out by the clock itself, so
    nothing is owed back. Counting back short steps cannot see a queue the host never waited on: a host
    that runs ahead through all the steps between two passes (session 45's k on an H100: 25 steps of 2-4
    ms each queueing more GPU work than that) runs no step short after a pass, whose sync drains the lot."""
    cost = refilled = owed = weight = 0.0
    for i, step in enumerate(itertools.chain(before, window)):
        counts = i >= len(before)
        if share := part(step):
            timed = measured(step)
            if timed is not None:
                cost += timed if counts else 0.0
                owed = 0.0
                continue
            owed, weight = max(0.0, step.wall_ms - typical), share
            cost += owed * weight if counts else 0.0
        elif queues and owed > 0.0 and step.wall_ms < typical:
            short = min(owed, typical - step.wall_ms)
            refilled += short * weight if counts else 0.0
            owed -= short
        else:
            owed = 0.0
    return max(0.0, cost - refilled), refilled


def between_iterations_ms(step: StepRecord, previous: StepRecord | None) -> float:
    """The time before ``step``, the first of a loader's iteration, in which no step ran since
    ``previous`` ended: the code between epochs. A step's own iter() time is already its wait.
    ``previous`` must be the step just before (steps overwritten unread between them ran in that time)."""
    if step.between_before_ms is not None:
        return step.between_before_ms
    if (
        previous is None
        or previous.step != step.step - 1
        or not step.epoch_start
        or not (step.start_monotonic_ns and previous.start_monotonic_ns)
    ):
        return 0.0
    ended_ns = previous.start_monotonic_ns + previous.wall_ms * _NS_PER_MS
    return max(0.0, (step.start_monotonic_ns - ended_ns) / _NS_PER_MS)


def _waiting_loader_workers(window: Sequence[StepRecord]) -> int | None:
    """The workers count whose loaders' steps waited longest in all (ties: the first seen)."""
    waits: dict[int, float] = {}
    for step in window:
        if step.loader_workers is not None:
            waits[step.loader_workers] = waits.get(step.loader_workers, 0.0) + step.data_wait_ms
    return max(waits, key=waits.__getitem__) if waits else None
