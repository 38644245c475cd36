"""The GPU's own idle gap before each step's work: the step clock's GPU side.

A step that is to be measured ends with an ``after`` event recorded once the model's work for it is
queued. At the next step's first work (a copy or a model call) that event is asked: not yet passed, the
GPU still works on the step before (no gap); passed, the stream has drained, and an event recorded now
times the gap once both complete (_gpu_timer.py). Which steps are measured: ``sampling``
(_gpu_sampling.py), so that the host time spent in CUDA calls stays within budget.

A pass over another loader inside a step (validation every N steps) queues kernels of its own between
the step's ``after`` and the next step's first work: timed as one interval, they were booked as idle (a
job at 99% NVML busy read 16% idle and "loop-bound"). Its work is queued between a batch's arrival and
the pass's next next(), never while it waits, so the mark moves with it: re-recorded at each of its
next() calls, asked at each batch's arrival as a step's first work asks ``after``. Each time the stream
had drained, a piece of idle (mark -> an event now) is measured, and the gap the next first work
measures is the sum: the GPU's idle between the two ends, its busy time in between left out.

The step's periodic work, a pass or a checkpoint (torch.save), is also timed whole on the GPU's clock: an
event as it begins (complete once the work queued before it has run) and one as it ends (complete once its
own work has run), in every step that holds one, not only sampled ones (they are rare). A host that runs
ahead of the GPU leaves the training steps' kernels queued when a pass or a save begins, and its sync
(`float(correct)`, the weights copied to the host) waits for them: its host wall holds the training's GPU
time (session 45's k on an H100: 85-92 ms a pass on the host, where the GPU was idle under 1 ms of it).
Between the two events the GPU ran only that work or sat idle because of it: what it cost the job,
whichever of the host or the GPU bounds it. A step holding both kinds is not timed (the analysis splits
its wall between them).

The clock says when steps open and close and where their work starts; this part owns the events, the
sampling and the CUDA device the events run on, and hands back the ring flags the gap sets.
"""

from __future__ import annotations

import os
import sys
import time
from collections import deque
from typing import Any

from xfertop import wire
from xfertop.reporter._gpu_sampling import GpuSampling
from xfertop.reporter._gpu_timer import MAX_RESOLVED_PER_BOUNDARY, GpuTimer, PendingGap, elapsed_ns
from xfertop.reporter._ring_writer import RingWriter

_now_ns = time.perf_counter_ns
#: Closed steps' periodic work whose end events have not completed, at most: a GPU this far behind has one
#: more left unmeasured rather than events piling up.
MAX_PENDING_PERIODIC = 8
#: The kinds of periodic work a span times (GpuGap.periodic_begins).
PASS, CHECKPOINT = 1, 2
#: Which mark a pass moves (GpuGap._pass_mark).
_AFTER = 1
_AFTER_PREV = 2


class GpuGap:
    def __init__(self) -> None:
        #: The events' timer, on the first CUDA device the job is seen to use; None until then.
        self.timer: GpuTimer | None = None
        self.sampling = GpuSampling(
            enabled=os.environ.get("XFERTOP_GPU_SAMPLING", "").lower() not in ("off", "0", "no")
        )
        self.timed_steps = 0  # steps whose gap was measured (events asked), for benchmarks
        #: The open step's gap: measured at once (0), pending (NO_VALUE with F_GPU_PENDING), or not.
        self.gap_ns = wire.NO_VALUE
        self._after: Any = None  # this step's "work queued" event, for the next step's gap
        #: The previous step's ``after``, until this step's first work asks it (measure); None: no gap to
        #: ask, and ``measure`` need not be called (the clock skips the call on most steps).
        self.after_prev: Any = None
        #: This step records ``after``: the next one gets its gap measured. Until a timer exists the
        #: sampling is not asked (nothing is measured) and stands at its start: every step records.
        self._marks_end = True
        #: A timer runs and this step records ``after``: the model's end is marked on the GPU (its hooks
        #: call ``model_ended`` only then), and its close has events to hand on.
        self.marking = False
        #: Measured gaps wait to be patched into the ring (pending, or dropped): ``step_written`` has work.
        self.unresolved = False
        #: A pass inside the open step moves a mark (pass_begins): 0 none, _AFTER this step's ``after``
        #: (the pass follows its model), _AFTER_PREV the step before's (the pass comes before the model).
        self._pass_mark = 0
        #: Pieces of idle a pass measured, for the gap the next first work measures: pairs of events not
        #: yet resolved, and the ns of those resolved (None and 0: none, the usual step).
        self._pieces: list[tuple[Any, Any]] | None = None
        self._pieces_ns = 0
        #: The end of the piece the mark opened at the pass's last batch, until the mark moves on.
        self._piece_end: Any = None
        #: A batch of the pass arrived and no next() of it came since: its work is queued after the mark.
        self._pass_batch_open = False
        #: The open step's periodic work on the GPU's clock: [kind (PASS, CHECKPOINT; 0: both, not timed),
        #: event at the first one's start, event at the last one's end (None until it ends)]; None where
        #: the step holds none (the clock asks it at close).
        self.periodic_span: list[Any] | None = None
        #: Closed steps' spans waiting for their events: (step, begin, end), oldest first.
        self._periodic_spans: deque[tuple[int, Any, Any]] = deque()

    def use_cuda_device(self, index: int | None) -> str | None:
        """Run the events on CUDA device ``index`` (None: the current one); the device's name, or None
        where torch is not imported."""
        torch = sys.modules.get("torch")
        if torch is None:
            return None
        if index is None:
            index = torch.cuda.current_device()
        self.timer = GpuTimer(torch, index)
        self.marking = self._marks_end
        return f"cuda:{index}"

    # -- a step's life --------------------------------------------------------------------------------
    def step_opens(self) -> None:
        self.gap_ns = wire.NO_VALUE
        if self.timer is not None:  # no timer: no step is measured, so none is counted down to
            self._marks_end = self.marking = self.sampling.step_opens()

    def measure(self, step: int) -> int:
        """At step ``step``'s first work: ask whether the GPU still works on the step before (no gap) or
        has drained (an event now; the gap resolves later). Returns the ring flags this sets."""
        after, timer = self.after_prev, self.timer
        if after is None or timer is None:
            return 0
        began = _now_ns()
        flags = 0
        if self._pieces is not None:  # a pass ran since the step before's model
            flags = self._measure_with_pieces(step, timer)
            self.sampling.spent_ns += _now_ns() - began
            return flags
        self.after_prev = None
        if not after.query():
            self.gap_ns = 0
            timer.release(after)
        else:
            first = timer.record()
            if first is None:  # a CUDA graph is being captured: no gap this step
                timer.release(after)
            else:
                timer.add(PendingGap(step, after, first))
                self.unresolved = True
                self.gap_ns = wire.NO_VALUE
                flags = wire.F_GPU_PENDING
                self.timed_steps += 1
        self.sampling.spent_ns += _now_ns() - began
        return flags

    def _measure_with_pieces(self, step: int, timer: GpuTimer) -> int:
        """measure() where a pass ran since the step before's model: the gap is its pieces of idle and,
        where the stream has drained again, the last mark -> now."""
        if self._pass_mark:  # the step's first work ends the pass before its model
            self._settle_pass(timer)
        after, self.after_prev = self.after_prev, None
        if after is None:  # (a CUDA graph was being captured: no mark) no gap
            self._drop_pieces(timer)
            return 0
        pieces, pieces_ns = self._pieces or [], self._pieces_ns
        self._pieces, self._pieces_ns = None, 0
        first = timer.record() if after.query() else None
        if first is None:  # busy (or a graph being captured): the pieces alone
            timer.release(after)
            after = None
        if first is None and not pieces:
            self.gap_ns = pieces_ns
            return 0
        timer.add(PendingGap(step, after, first, pieces, pieces_ns))
        self.unresolved = True
        self.gap_ns = wire.NO_VALUE
        self.timed_steps += 1
        return wire.F_GPU_PENDING

    def model_ended(self) -> None:
        """The model's work for the step is queued: the step's ``after`` event moves here (the model's
        last call of the step is the one that counts)."""
        timer = self.timer
        if not self._marks_end or timer is None:
            return
        began = _now_ns()
        if self._after is None:
            self._after = timer.record()
        else:
            timer.re_record(self._after)
        self.sampling.spent_ns += _now_ns() - began

    def step_closing(self, step: int, now: int) -> int:
        """The step's GPU bookkeeping at its end: a gap still to ask (no work was seen: its end is its
        first work), its ``after`` event handed to the next step, the sampling rate revised. Returns the
        ring flags this sets."""
        timer = self.timer
        if timer is None or not (self._marks_end or self.after_prev is not None):
            return 0  # a step between measured ones: no event to ask or to hand on
        began = _now_ns()
        flags = self.measure(step) if self.after_prev is not None else 0
        sampling = self.sampling
        if self._pass_mark:
            self._settle_pass(timer)
        if self._marks_end:
            if self._after is None:
                self._after = timer.record()  # no backward or optimizer step seen: the step's end
            self.after_prev, self._after = self._after, None
            sampling.step_closed(sampling.spent_ns + _now_ns() - began, now, step)
        else:
            self.after_prev = None
            sampling.spent_ns += _now_ns() - began
        if self.after_prev is None and self._pieces is not None:  # no gap left to carry them
            self._drop_pieces(timer)
        return flags

    # -- a pass over another loader inside the open step (see the module docstring) ------------------------
    def pass_begins(self, after_model: bool) -> None:
        """A pass begins inside the open step, after its model (its ``after`` is the mark, where this
        step records one) or before it (the step before's, where its gap is still to be asked). After the
        model with this step's own gap not asked yet (no first work was seen), the pieces would join that
        gap, not the next one: the pass is not followed then."""
        if self.timer is None:
            return
        self.periodic_begins(PASS)
        self._pass_batch_open = False
        if after_model:
            self._pass_mark = _AFTER if self._marks_end and self.after_prev is None else 0
        else:
            self._pass_mark = _AFTER_PREV if self.after_prev is not None else 0

    def pass_ends(self) -> None:
        """The pass is over; what it measured stays for the gap the next first work measures."""
        timer = self.timer
        self.periodic_ends()
        if self._pass_mark and timer is not None:
            began = _now_ns()
            self._settle_pass(timer)
            self.sampling.spent_ns += _now_ns() - began

    def pass_batch_arrives(self) -> None:
        """A batch of the pass arrived: its work is about to be queued. The mark is asked as at a step's
        first work: drained, the GPU idled since, and a piece of idle ends now (an event, read when the
        mark moves on)."""
        slot, timer = self._pass_mark, self.timer
        if not slot or timer is None or self._pass_batch_open:
            return
        self._pass_batch_open = True  # the mark must move before the gap is asked (_move_mark)
        if self._pieces is None:
            self._pieces = []  # measure() takes the pieces' path from here on
        mark = self._after if slot == _AFTER else self.after_prev
        if mark is None:
            return
        began = _now_ns()
        if mark.query():
            self._piece_end = timer.record()  # (None while a CUDA graph is captured: no piece)
        self.sampling.spent_ns += _now_ns() - began

    def pass_waits(self) -> None:
        """A next() of the pass begins: the work of its batch so far is queued, so the mark moves here."""
        timer = self.timer
        if self._pass_mark and timer is not None:
            began = _now_ns()
            self._move_mark(timer)
            self.sampling.spent_ns += _now_ns() - began

    # -- the step's periodic work on the GPU's clock (see the module docstring) -----------------------------
    def periodic_begins(self, kind: int) -> None:
        """A pass or a checkpoint (``kind``) begins in the open step: the span's first event, where it has
        none; a second kind in the step leaves the step untimed."""
        timer = self.timer
        if timer is None:
            return
        span = self.periodic_span
        if span is None:
            begin = timer.record()
            if begin is not None:  # (None while a CUDA graph is captured: not timed)
                self.periodic_span = [kind, begin, None]
        elif span[0] != kind:
            span[0] = 0

    def periodic_ends(self) -> None:
        """The pass or checkpoint is over: the span's end moves here (the step's last one counts)."""
        span, timer = self.periodic_span, self.timer
        if span is None or timer is None:
            return
        if span[2] is None:
            span[2] = timer.record()
        else:
            timer.re_record(span[2])

    def drop_periodic_span(self) -> None:
        """What was taken for a pass trained (the loop moved to another loader): nothing to time."""
        span, self.periodic_span = self.periodic_span, None
        if span is not None and self.timer is not None:
            self.timer.release(span[1])
            self.timer.release(span[2])

    def close_periodic_span(self, step: int) -> int:
        """Step ``step``, which held a pass or a checkpoint, closes: its span waits for its events (the end
        recorded now if the work ran to the step's end). Returns the ring flags this sets."""
        span, self.periodic_span = self.periodic_span, None
        timer = self.timer
        if span is None or timer is None:
            return 0
        kind, begin, end = span
        if end is None and kind:
            end = timer.record()
        if end is None or not kind or len(self._periodic_spans) >= MAX_PENDING_PERIODIC:
            timer.release(begin)
            timer.release(end)
            return 0
        self._periodic_spans.append((step, begin, end))
        self.unresolved = True
        return wire.F_PERIODIC_PENDING

    def _resolve_periodic(self, writer: RingWriter, timer: GpuTimer) -> None:
        """Patch in the spans whose events have completed (a stream runs its events in order: the oldest
        first; both are asked, as the work may have ended on another stream than it began on); never
        waits."""
        spans = self._periodic_spans
        while spans and spans[0][2].query() and spans[0][1].query():
            step, begin, end = spans.popleft()
            writer.patch_periodic(step, elapsed_ns(begin, end))
            timer.release(begin)
            timer.release(end)

    def _move_mark(self, timer: GpuTimer) -> None:
        """The pass's work so far is queued: an open piece is final, and the mark is recorded now."""
        self._pass_batch_open = False
        slot = self._pass_mark
        mark = self._after if slot == _AFTER else self.after_prev
        if self._piece_end is not None:
            mark = self._close_piece(mark, timer)
        if mark is None:
            mark = timer.record()
            if slot == _AFTER:
                self._after = mark
            else:
                self.after_prev = mark
        else:
            timer.re_record(mark)

    def _settle_pass(self, timer: GpuTimer) -> None:
        """The pass ends, or the step's first work comes: a batch that arrived with no next() of the
        pass after it had its work queued after the mark, which moves to now (its piece, if open, is
        final). The pass is no longer followed."""
        if self._pass_batch_open:
            self._move_mark(timer)
        self._pass_mark = 0

    def _close_piece(self, mark: Any, timer: GpuTimer) -> Any:
        """The open piece of idle (``mark`` -> ``_piece_end``) is final: read now where its end has
        completed (it was recorded on a drained stream), else kept for the gap's resolution. Returns the
        mark, free to move on, or None where the piece keeps it."""
        end, self._piece_end = self._piece_end, None
        if end.query():
            self._pieces_ns += elapsed_ns(mark, end)
            timer.release(end)
            return mark
        if self._pieces is None:
            self._pieces = []
        self._pieces.append((mark, end))
        return None

    def _drop_pieces(self, timer: GpuTimer) -> None:
        for pair in self._pieces or ():
            timer.release(pair[0])
            timer.release(pair[1])
        timer.release(self._piece_end)
        self._pieces, self._pieces_ns, self._piece_end = None, 0, None

    # -- patching the ring once the events complete ------------------------------------------------------
    def step_written(self, writer: RingWriter) -> None:
        """After a step's write: patch the gaps that resolved (this very step's may), mark those dropped."""
        timer = self.timer
        if timer is None:
            return
        if timer.pending:
            timer.resolve(lambda step, gap_ns: _patch(writer, step, gap_ns))
        if self._periodic_spans:
            self._resolve_periodic(writer, timer)
        if timer.dropped_steps:
            for step in timer.dropped_steps:
                writer.patch_gpu(step, wire.NO_VALUE, wire.F_GPU_DROPPED, wire.F_GPU_PENDING)
            writer.set_word(wire.H_GPU_DROPPED, writer.words[wire.H_GPU_DROPPED] + len(timer.dropped_steps))
            timer.dropped_steps.clear()
        self.unresolved = bool(timer.pending or self._periodic_spans)

    def resolve_pending(self, writer: RingWriter) -> None:
        """Patch in every pending gap whose events have completed; never waits."""
        timer = self.timer
        if timer is not None:
            for _ in range(timer.max_pending // MAX_RESOLVED_PER_BOUNDARY + 1):
                timer.resolve(lambda step, gap_ns: _patch(writer, step, gap_ns))
            self._resolve_periodic(writer, timer)
            self.unresolved = bool(timer.pending or timer.dropped_steps or self._periodic_spans)


def _patch(writer: RingWriter, step: int, gap_ns: int) -> None:
    writer.patch_gpu(step, gap_ns, wire.F_GPU_RESOLVED, wire.F_GPU_PENDING)


def cuda_device_in_use(torch: Any, local_rank: str | None) -> int | None:
    """The GPU this process computes on, when nothing told us (no to_device, no CUDA batch), or None.

    Only a device where this process already reserved memory is taken (memory_allocated drops to 0
    between steps when the batch is freed), so the clock never opens a CUDA context on a GPU the job
    does not use (every DDP rank on GPU 0). LOCAL_RANK is asked first.
    """
    cuda = torch.cuda
    if not cuda.is_initialized():
        return None
    candidates = [int(local_rank)] if local_rank and local_rank.isdigit() else []
    candidates.append(cuda.current_device())
    for index in candidates:
        if 0 <= index < cuda.device_count() and cuda.memory_reserved(index) > 0:
            return index
    return None
