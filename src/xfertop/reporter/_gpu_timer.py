"""GPU clock for steps: pooled CUDA timing events, resolved lazily and never synchronised.

A timed step records up to three events on the current stream of its device: ready (batch handed to
the loop), copied (host-to-device copies issued, only when a copy was marked), end (the next step
begins); its idle gap also needs the end event of the step before it. They sit in a bounded deque; the
clock asks the oldest with ``query()`` (only its ``end`` event when all of them went to one stream) and,
once every event it needs has completed, turns them into durations with two or three
``elapsed_time()`` calls. Which steps are timed is the clock's choice (see _clock.py: sampling).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Called with (step, copy_gpu_ns or -1, compute_gpu_ns, gpu_idle_ns or -1) when a step resolves.
ResolvedCallback = Callable[[int, int, int, int], None]
MAX_RESOLVED_PER_BOUNDARY = 4


@dataclass(slots=True)
class PendingStep:
    step: int
    prev_end: Any | None
    ready: Any
    copied: Any | None
    end: Any
    #: Every event went to one stream (same-stream events complete in order: asking ``end`` is enough).
    one_stream: bool = False
    #: ``end`` is also the next step's ``prev_end``: released when that step resolves, not this one.
    end_shared: bool = True
    #: An iteration's first step: its wall time (host clock), which its idle gap cannot exceed. The step
    #: starts at iter(loader), while its ``prev_end`` is the last step of the iteration before: the time
    #: between the two (validation, checkpointing) is no step's, and no step's idle gap. -1: no cap.
    idle_cap_ns: int = -1


class GpuTimer:
    def __init__(self, torch: Any, device_index: int, max_pending: int = 64) -> None:
        cuda = torch.cuda
        self._cuda = cuda
        self.device_index = device_index
        self._pool: list[Any] = []
        self._pending: deque[PendingStep] = deque()
        self.max_pending = max_pending
        self.dropped_steps: list[int] = []
        # Fast paths (about 5 us of Python per record saved on an H200): ask the C++ side which stream is
        # current and reuse our Stream object while it stays the same. Any surprise: the public API.
        native = getattr(torch, "_C", None)
        self._raw_current_stream = getattr(native, "_cuda_getCurrentStream", None)
        self._raw_capturing = getattr(native, "_cuda_isCurrentStreamCapturing", None)
        self._stream_key: Any = None
        self._stream: Any = None
        self._cuda_ready = False
        #: Bumped whenever the current stream changes (or cannot be told): equal values around a step's
        #: records mean they all went to one stream.
        self.stream_epoch = 0

    def _current_stream(self) -> Any:
        raw = self._raw_current_stream
        if raw is not None:
            try:
                key = raw(self.device_index)
                if key != self._stream_key or self._stream is None:
                    self._stream = self._cuda.current_stream(self.device_index)
                    self._stream_key = key
                    self.stream_epoch += 1
                return self._stream
            except Exception:
                self._raw_current_stream = None
        self.stream_epoch += 1  # the public API cannot say whether the stream changed: assume it did
        return self._cuda.current_stream(self.device_index)

    def capturing(self) -> bool:
        raw = self._raw_capturing
        if raw is not None and (self._cuda_ready or self._cuda.is_initialized()):
            self._cuda_ready = True  # never asking again: CUDA does not de-initialise
            try:
                return bool(raw())
            except Exception:
                self._raw_capturing = None
        return bool(self._cuda.is_current_stream_capturing())

    def record(self) -> Any | None:
        """A timing event recorded now on the device's current stream; None while a graph is captured."""
        raw = self._raw_capturing
        if raw is not None and self._cuda_ready:  # the fast path of capturing()
            try:
                if raw():
                    return None
            except Exception:
                self._raw_capturing = None
                if self.capturing():
                    return None
        elif self.capturing():
            return None
        pool = self._pool
        event = pool.pop() if pool else self._cuda.Event(enable_timing=True)
        event.record(self._current_stream())
        return event

    def re_record(self, event: Any) -> None:
        if self.capturing():  # never inside a CUDA graph being captured: the first record stands
            return
        event.record(self._current_stream())

    def release(self, event: Any | None) -> None:
        if event is not None and len(self._pool) < 4 * self.max_pending:
            self._pool.append(event)

    def add(self, pending: PendingStep) -> None:
        if len(self._pending) >= self.max_pending:
            oldest = self._pending.popleft()
            self.dropped_steps.append(oldest.step)
            self.release(oldest.ready)
            self.release(oldest.copied)
        self._pending.append(pending)

    @property
    def pending_count(self) -> int:
        return len(self._pending)

    def resolve(self, on_resolved: ResolvedCallback) -> None:
        """Resolve the oldest completed steps (a few at most); never waits for the GPU."""
        pending = self._pending
        for _ in range(MAX_RESOLVED_PER_BOUNDARY):
            if not pending:
                return
            oldest = pending[0]
            if not (oldest.end.query() if oldest.one_stream else _all_done(oldest)):
                return
            pending.popleft()
            ready = oldest.ready
            copied = oldest.copied
            copy_ns = -1
            if copied is not None:
                copy_ns = int(ready.elapsed_time(copied) * 1_000_000)
                if copy_ns < 0:  # never backwards on one stream; a stream switch can order events oddly
                    copy_ns = 0
                compute_ns = int(copied.elapsed_time(oldest.end) * 1_000_000)
            else:
                compute_ns = int(ready.elapsed_time(oldest.end) * 1_000_000)
            prev_end = oldest.prev_end
            idle_ns = -1
            if prev_end is not None:
                idle_ns = int(prev_end.elapsed_time(ready) * 1_000_000)
                if idle_ns < 0:
                    idle_ns = 0
                elif 0 <= oldest.idle_cap_ns < idle_ns:
                    idle_ns = oldest.idle_cap_ns
            on_resolved(oldest.step, copy_ns, compute_ns if compute_ns > 0 else 0, idle_ns)
            # prev_end was the end of an earlier step, resolved or never timed: no one needs it any more.
            pool = self._pool
            if len(pool) < 4 * self.max_pending:
                pool.append(ready)
                if prev_end is not None:
                    pool.append(prev_end)
                if copied is not None:
                    pool.append(copied)
                if not oldest.end_shared:
                    pool.append(oldest.end)


def _all_done(step: PendingStep) -> bool:
    # The loop switched streams between the step's events: each must be asked.
    return (
        step.end.query()
        and step.ready.query()
        and (step.copied is None or step.copied.query())
        and (step.prev_end is None or step.prev_end.query())
    )
