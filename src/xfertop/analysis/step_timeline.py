"""Where a rank's step time went over minutes: its steps gathered into buckets of time.

A ring holds the last 1024 steps (a second of a fast job, minutes of a slow one); the viewer keeps, per
rank, the sums of each second's steps for an hour, so a strip of a few seconds per row can show whether
starvation comes and goes over minutes. A step belongs to the second it began in (its
``start_monotonic_ns``; steps without one, e.g. from Prometheus, follow the previous step's end). A
bucket's share of a part is that part's time over the bucket's wall time: the share of the bucket's
time, not a mean of per-step shares that would weigh a 1 ms step like a 1 s one.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from xfertop.model.jobs import StepRecord

NS_PER_S = 1_000_000_000
NS_PER_MS = 1_000_000
#: Seconds of history kept per rank.
KEPT_S = 3600
#: The parts of a step's host time, in the order they are stacked (rank_row.SEGMENTS draws them).
PARTS = ("wait", "loop", "copy", "model", "sync")

Parts = tuple[float, float, float, float, float]


def step_parts_ms(step: StepRecord) -> Parts:
    """The step's wall time in ``PARTS`` order: wait, loop (before and after the model), copy, model,
    sync."""
    return (
        step.data_wait_ms,
        step.loop_pre_ms + step.loop_post_ms,
        step.copy_cpu_ms,
        step.model_ms,
        step.sync_ms,
    )


@dataclass(frozen=True)
class StepBucket:
    """The steps that began in ``seconds`` seconds from ``start_s`` (on the steps' clock)."""

    start_s: int
    seconds: int
    steps: int
    wall_ms: float
    #: Each part's time summed over the steps, in ``PARTS`` order.
    parts_ms: Parts

    def shares(self) -> Parts:
        """Each part's share of the bucket's wall time (all 0 for a bucket of no time)."""
        wall = self.wall_ms
        if wall <= 0:
            return (0.0, 0.0, 0.0, 0.0, 0.0)
        wait, loop, copy, model, sync = self.parts_ms
        return (wait / wall, loop / wall, copy / wall, model / wall, sync / wall)


class _Second:
    """The running sums of one second's steps."""

    __slots__ = ("copy", "loop", "model", "second", "steps", "sync", "wait", "wall")

    def __init__(self, second: int) -> None:
        self.second = second
        self.steps = 0
        self.wall = self.wait = self.loop = self.copy = self.model = self.sync = 0.0


class StepTimeline:
    """One rank's steps, one-second sums over the last ``kept_s`` seconds. ``add`` the rank's steps at
    each snapshot (the ring's history, oldest first): only the steps not seen yet are counted."""

    def __init__(self, kept_s: int = KEPT_S) -> None:
        self._kept_s = kept_s
        self._seconds: deque[_Second] = deque()
        self.last_step: int | None = None
        #: Where the newest step ended, ns on the steps' clock: the start of a next step without one.
        self._end_ns = 0
        #: Buckets that can no longer change (a later second has steps), by (seconds, start_s).
        self._closed: dict[tuple[int, int], StepBucket] = {}

    @property
    def oldest_s(self) -> int | None:
        """The first second kept (None before any step)."""
        return self._seconds[0].second if self._seconds else None

    @property
    def newest_s(self) -> int | None:
        """The second the newest step began in (None before any)."""
        return self._seconds[-1].second if self._seconds else None

    def add(self, steps: Sequence[StepRecord]) -> int:
        """Count the steps of ``steps`` newer than the last counted; returns how many were new."""
        last = self.last_step
        first_new = len(steps)
        if last is None:
            first_new = 0
        else:
            while first_new > 0 and steps[first_new - 1].step > last:
                first_new -= 1
        for index in range(first_new, len(steps)):
            self._count(steps[index])
        if first_new < len(steps):
            self.last_step = steps[-1].step
            self._forget_old()
        return len(steps) - first_new

    def _count(self, step: StepRecord) -> None:
        start_ns = step.start_monotonic_ns or self._end_ns
        self._end_ns = start_ns + int(step.wall_ms * NS_PER_MS)
        second = start_ns // NS_PER_S
        seconds = self._seconds
        # A step from before the newest second (a clock that went back) joins the newest.
        if not seconds or second > seconds[-1].second:
            seconds.append(_Second(second))
        sums = seconds[-1]
        wait, loop, copy, model, sync = step_parts_ms(step)
        sums.steps += 1
        sums.wall += step.wall_ms
        sums.wait += wait
        sums.loop += loop
        sums.copy += copy
        sums.model += model
        sums.sync += sync

    def _forget_old(self) -> None:
        seconds = self._seconds
        oldest = seconds[-1].second - self._kept_s
        while seconds and seconds[0].second < oldest:
            seconds.popleft()
        if len(self._closed) > 4096:  # bucket sizes came and went
            self._closed.clear()

    def buckets(self, seconds: int, count: int) -> list[StepBucket | None]:
        """The last ``count`` buckets of ``seconds`` seconds each, oldest first, the last one holding the
        newest step; each starts at a multiple of ``seconds``. None for a bucket in which no step began
        (and for those before the first step counted)."""
        newest = self.newest_s
        if newest is None or count <= 0 or seconds <= 0:
            return [None] * max(count, 0)
        last_start = newest - newest % seconds
        first_start = last_start - (count - 1) * seconds
        out: list[StepBucket | None] = []
        for start in range(first_start, last_start + 1, seconds):
            bucket = self._closed.get((seconds, start))
            if bucket is None:
                bucket = self._sum(start, seconds)
                if bucket is not None and start != last_start:  # a later second has steps: it is closed
                    self._closed[(seconds, start)] = bucket
            out.append(bucket)
        return out

    def _sum(self, start: int, seconds: int) -> StepBucket | None:
        end = start + seconds
        steps = 0
        wall = wait = loop = copy = model = sync = 0.0
        # The kept seconds are in order: walk back from the newest to the bucket's.
        for sums in reversed(self._seconds):
            if sums.second >= end:
                continue
            if sums.second < start:
                break
            steps += sums.steps
            wall += sums.wall
            wait += sums.wait
            loop += sums.loop
            copy += sums.copy
            model += sums.model
            sync += sums.sync
        if not steps:
            return None
        return StepBucket(start, seconds, steps, wall, (wait, loop, copy, model, sync))
