"""The GPU's own idle gap before a step's first work: CUDA events, resolved lazily, never synchronised.

An event completes when the stream reaches it, and on an empty stream that is when the host records it,
so the time between two events is GPU time only while work is queued across it. The gap is measured
where that holds: the step before records ``after`` once its model has queued its work (after its last
backward or optimizer step, else at its end). When the next step is about to issue its first work (a copy
or the model's call), ``after`` is asked with ``query()``:
- not complete: the GPU still works on the step before: no gap (0), and nothing more to record;
- complete: the stream has drained, so an event ``first`` recorded now completes at once, and
  ``after.elapsed_time(first)`` is how long the GPU had nothing to do. That is the GPU's idle gap, and
  the host's clock says what the host did meanwhile (the analysis attributes it).
A pass over another loader between the two (validation every N steps) queues its own kernels between
``after`` and ``first``: its idle is measured in pieces across which nothing was queued (_gpu_gap.py), and
the gap is their sum. Pending gaps sit in a bounded deque; the oldest is asked at step boundaries and
resolved once done.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Called with (step, gap_ns) when a step's gap resolves.
ResolvedCallback = Callable[[int, int], None]
MAX_RESOLVED_PER_BOUNDARY = 4


@dataclass(slots=True)
class PendingGap:
    """A step's gap waiting for its events: ``after`` -> ``first`` (None: the GPU was still busy at the
    step's first work), plus idle measured earlier in pieces (``pieces``, pairs of events, and
    ``pieces_ns``, those already resolved). ``last``: the event recorded last, whose completion means all
    of them completed (a stream runs its events in order)."""

    step: int
    after: Any
    first: Any
    pieces: list[tuple[Any, Any]] | None = None
    pieces_ns: int = 0

    @property
    def last(self) -> Any:
        if self.first is not None:
            return self.first
        return self.pieces[-1][1] if self.pieces else None

    def events(self) -> list[Any]:
        out = [self.after, self.first]
        for pair in self.pieces or ():
            out.extend(pair)
        return [event for event in out if event is not None]

    def idle_ns(self) -> int:
        """The gap once ``last`` has completed: every piece's idle and after -> first."""
        total = self.pieces_ns
        for begin, end in self.pieces or ():
            total += elapsed_ns(begin, end)
        if self.first is not None:
            total += elapsed_ns(self.after, self.first)
        return total


def elapsed_ns(begin: Any, end: Any) -> int:
    """The GPU's time between two completed events, in ns (never negative)."""
    return max(0, int(begin.elapsed_time(end) * 1_000_000))


class GpuTimer:
    def __init__(self, torch: Any, device_index: int, max_pending: int = 64) -> None:
        cuda = torch.cuda
        self._cuda = cuda
        self.device_index = device_index
        self._pool: list[Any] = []
        self.pending: deque[PendingGap] = deque()  # oldest first
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

    def _current_stream(self) -> Any:
        raw = self._raw_current_stream
        if raw is not None:
            try:
                key = raw(self.device_index)
                if key != self._stream_key or self._stream is None:
                    self._stream = self._cuda.current_stream(self.device_index)
                    self._stream_key = key
                return self._stream
            except Exception:
                self._raw_current_stream = None
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
        if self.capturing():
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

    def add(self, pending: PendingGap) -> None:
        if len(self.pending) >= self.max_pending:
            oldest = self.pending.popleft()
            self.dropped_steps.append(oldest.step)
            for event in oldest.events():
                self.release(event)
        self.pending.append(pending)

    def resolve(self, on_resolved: ResolvedCallback) -> None:
        """Resolve the oldest completed gaps (a few at most); never waits for the GPU."""
        pending = self.pending
        for _ in range(MAX_RESOLVED_PER_BOUNDARY):
            if not pending:
                return
            oldest = pending[0]
            if oldest.pieces is None:  # the usual gap, one pair: no list built
                if not oldest.first.query():
                    return
                pending.popleft()
                on_resolved(oldest.step, elapsed_ns(oldest.after, oldest.first))
                self.release(oldest.after)
                self.release(oldest.first)
                continue
            if not oldest.last.query():
                return
            pending.popleft()
            on_resolved(oldest.step, oldest.idle_ns())
            for event in oldest.events():
                self.release(event)
