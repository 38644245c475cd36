"""GPU clock for steps: pooled CUDA timing events, resolved lazily and never synchronised.

Each step records up to three events on the current stream of its device: ready (batch handed to
the loop), copied (host-to-device copies issued), end (the next step begins). They sit in a bounded
deque; at each step boundary the oldest is asked with ``query()`` and, only once every event it needs
has completed, turned into durations with ``elapsed_time()``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Called with (step, copy_gpu_ns or -1, compute_gpu_ns, gpu_idle_ns or -1) when a step resolves.
ResolvedCallback = Callable[[int, int, int, int], None]
MAX_RESOLVED_PER_BOUNDARY = 4


@dataclass
class PendingStep:
    step: int
    prev_end: Any | None
    ready: Any
    copied: Any | None
    end: Any


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
        event = self._pool.pop() if self._pool else self._cuda.Event(enable_timing=True)
        event.record(self._current_stream())
        return event

    def re_record(self, event: Any) -> None:
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
            if not _all_done(oldest):
                return
            pending.popleft()
            ns_per_ms = 1_000_000
            start = oldest.ready
            copy_ns = -1
            if oldest.copied is not None:
                copy_ns = max(0, int(oldest.ready.elapsed_time(oldest.copied) * ns_per_ms))
                start = oldest.copied
            compute_ns = max(0, int(start.elapsed_time(oldest.end) * ns_per_ms))
            idle_ns = -1
            if oldest.prev_end is not None:
                idle_ns = max(0, int(oldest.prev_end.elapsed_time(oldest.ready) * ns_per_ms))
            on_resolved(oldest.step, copy_ns, compute_ns, idle_ns)
            # prev_end was the end of an already resolved step: no one needs it any more.
            self.release(oldest.prev_end)
            self.release(oldest.ready)
            self.release(oldest.copied)


def _all_done(step: PendingStep) -> bool:
    # Same-stream events complete in order, so `end` usually settles it; the others are cheap to ask
    # and keep us right when the loop switched streams between them.
    return (
        step.end.query()
        and step.ready.query()
        and (step.copied is None or step.copied.query())
        and (step.prev_end is None or step.prev_end.query())
    )
