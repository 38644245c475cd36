"""A fake CUDA for the reporter's GPU clock: events on streams against a simulated GPU timeline.

It behaves like the real thing where the reporter depends on it (recorded on an H200, GPU-FACTS.md and
ATen's CUDAEvent.h): an event completes when all work queued before it on its stream has run, so one
recorded on an empty stream completes at once (when the host records it); ``query()`` is False until
the stream reaches it (True for an event never recorded); ``elapsed_time()`` on an event that has not
completed raises "Both events must be completed before calculating elapsed time."; a stream keeps its
work when another one is made current and back again; nothing blocks but ``synchronize()``, which
returns once every stream has drained. Time is driven by the test: ``FakeCuda.host_ms`` is the host
clock, ``launch()`` queues GPU work on the current stream.

A cost model makes its calls cost what the real ones cost the host, as busy-waits, so a benchmark on a
CPU machine predicts the reporter's overhead on a GPU one: ``FakeCuda(costs=H200_COSTS_NS)``.
"""

from __future__ import annotations

import os
import time
from types import SimpleNamespace

#: Host ns per call measured on the H200 (torch 2.11+cu130, benchmarks/reporter_overhead.py
#: cuda_event_costs): GpuTimer.record 2.43 us (our whole record path, stream look-up included), query
#: 1.43 us. elapsed_time was not measured: 1.5 us assumed (like query, one driver call).
H200_COSTS_NS = {"record": 2_430, "query": 1_430, "elapsed_time": 1_500}

_now_ns = time.perf_counter_ns


def _spin(ns: int) -> None:
    if ns > 0:
        deadline = _now_ns() + ns
        while _now_ns() < deadline:
            pass


class FakeStream:
    def __init__(self, gpu: FakeCuda, stream_id: int) -> None:
        self._gpu = gpu
        self.stream_id = stream_id
        self.busy_until_ms = 0.0


def _abort_if_forked(owner_pid: int, getpid=os.getpid, write=os.write, abort=os.abort) -> None:
    """CUDA cannot be touched in a forked child (GPU-FACTS.md, seen on the H200): using or destroying an
    inherited event there throws from ``c10::cuda::ExchangeDevice`` inside a destructor, and the process
    dies of ``std::terminate``: SIGABRT, with this line on stderr. The os functions are bound early: at
    interpreter shutdown ``os`` may be gone before the last events are freed."""
    if getpid() != owner_pid:
        write(
            2,
            b"terminate called after throwing an instance of 'c10::AcceleratorError'\n"
            b"  what():  CUDA error: initialization error (fake CUDA, in a forked child)\n",
        )
        abort()


class FakeEvent:
    def __init__(self, gpu: FakeCuda, enable_timing: bool = False) -> None:
        self._gpu = gpu
        self._owner_pid = os.getpid()
        self.enable_timing = enable_timing
        self.done_at_ms: float | None = None

    def __del__(self) -> None:
        _abort_if_forked(self._owner_pid)

    def record(self, stream: FakeStream | None = None) -> None:
        _abort_if_forked(self._owner_pid)
        _spin(self._gpu.costs_ns["record"])
        stream = stream or self._gpu.stream
        self.done_at_ms = max(stream.busy_until_ms, self._gpu.host_ms)
        self._gpu.records += 1

    def query(self) -> bool:
        _abort_if_forked(self._owner_pid)
        self._gpu.queries += 1
        _spin(self._gpu.costs_ns["query"])
        return self.done_at_ms is None or self._gpu.host_ms >= self.done_at_ms

    def elapsed_time(self, end: FakeEvent) -> float:
        _abort_if_forked(self._owner_pid)
        self._gpu.elapsed_calls += 1
        _spin(self._gpu.costs_ns["elapsed_time"])
        if not (self.enable_timing and end.enable_timing):
            raise RuntimeError("Both events must be recorded with timing enabled")
        host_ms = self._gpu.host_ms
        if (
            self.done_at_ms is None
            or end.done_at_ms is None
            or host_ms < self.done_at_ms
            or host_ms < end.done_at_ms
        ):
            self._gpu.unfinished_elapsed_calls += 1
            raise RuntimeError("Both events must be completed before calculating elapsed time.")
        return end.done_at_ms - self.done_at_ms


class FakeCuda:
    """Stands in for the ``torch`` module as GpuTimer sees it: ``torch.cuda`` and the two ``torch._C``
    functions it uses (``_cuda_getCurrentStream`` answers (stream id, device index, device type))."""

    def __init__(self, costs: dict[str, int] | None = None) -> None:
        #: Host ns each record / query / elapsed_time call busy-waits (none by default).
        self.costs_ns = {"record": 0, "query": 0, "elapsed_time": 0, **(costs or {})}
        self.host_ms = 0.0
        self.stream = FakeStream(self, 0)
        self._streams = {0: self.stream}
        self.current_stream_objects_made = 0
        self.initialized = True
        self.current_device = 0
        #: Bytes the caching allocator reserves per device index: a GPU the process never used holds 0, and
        #: (as on the H200) reserved memory stays when the step's tensors are freed, unlike memory_allocated.
        self.reserved_bytes = [0, 0]
        self.capturing = False
        self.records = 0
        self.queries = 0
        self.elapsed_calls = 0
        self.unfinished_elapsed_calls = 0
        self.synchronize_calls = 0
        #: Every launch's (start, end) on the GPU's time line, for idle_ms.
        self.busy_intervals: list[tuple[float, float]] = []
        self.cuda = SimpleNamespace(
            Event=lambda enable_timing=False: FakeEvent(self, enable_timing),
            current_stream=self._current_stream,
            is_current_stream_capturing=lambda: self.capturing,
            is_initialized=lambda: self.initialized,
            current_device=lambda: self.current_device,
            device_count=lambda: len(self.reserved_bytes),
            memory_allocated=lambda index: 0,  # the batch was freed: nothing live between steps
            memory_reserved=lambda index: self.reserved_bytes[index],
            synchronize=self._synchronize,
        )

        self._C = SimpleNamespace(
            _cuda_getCurrentStream=lambda device_index: (self.stream.stream_id, device_index, 1),
            _cuda_isCurrentStreamCapturing=lambda: self.capturing,
        )

    def _current_stream(self, device: int | None = None) -> FakeStream:
        self.current_stream_objects_made += 1  # the real one builds a Python Stream object each call
        return self.stream

    def use_stream(self, stream_id: int) -> FakeStream:
        """Like ``with torch.cuda.stream(s)``: later work and events go to that stream (made at its first
        use; 0 is the default stream), which keeps whatever was queued on it."""
        self.stream = self._streams.setdefault(stream_id, FakeStream(self, stream_id))
        return self.stream

    def _synchronize(self) -> None:
        """The host blocks until every stream has run all its work."""
        self.synchronize_calls += 1
        self.host_ms = max(self.host_ms, *(stream.busy_until_ms for stream in self._streams.values()))

    def launch(self, duration_ms: float) -> None:
        """Queue GPU work on the current stream; it starts when the stream is free and the host got here."""
        start = max(self.stream.busy_until_ms, self.host_ms)
        self.stream.busy_until_ms = start + duration_ms
        self.busy_intervals.append((start, start + duration_ms))

    def idle_ms(self, begin_ms: float, end_ms: float) -> float:
        """The truth a test measures against: how long, between two host times, no work ran (one stream)."""
        busy = sum(max(0.0, min(end, end_ms) - max(start, begin_ms)) for start, end in self.busy_intervals)
        return end_ms - begin_ms - busy

    def host_work(self, duration_ms: float) -> None:
        self.host_ms += duration_ms
