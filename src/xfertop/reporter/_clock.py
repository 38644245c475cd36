"""The step clock: the host's step in parts, and the GPU's own idle gap before each step's work.

A step runs from one ``next()`` call on the loader to the next one (or from one ``step()`` exit to
the next). The clock owns the step boundaries and writes each step to the ring; its parts, each tested
on its own:

- _step_work.py: the open step's work as `xfertop run`'s hooks report it (copies, the model, syncs),
  and from it the host's step split into parts that add up to its wall (wait, the loop's own work
  before the model, copies, the model, syncs, the loop's own work after it);
- _gpu_gap.py: where a CUDA device is in use, the GPU's idle gap before the step's first work, measured
  with events on some steps (_gpu_sampling.py) and patched in once they complete;
- _loader_workers.py: which loader's ``num_workers`` the ring reports.

Every method is fail-open: an internal error is counted, and after ``MAX_ERRORS`` of them the clock
switches itself off for good.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from xfertop import wire
from xfertop.reporter._copy import PinnedMemo
from xfertop.reporter._gpu_gap import GpuGap, cuda_device_in_use
from xfertop.reporter._host_memory import pinned_host_bytes
from xfertop.reporter._loader_workers import LoaderWorkers, ZippedFetches
from xfertop.reporter._ready_clock import SAMPLE_NS as READY_SAMPLE_NS
from xfertop.reporter._ready_clock import BlockedShares
from xfertop.reporter._ring_writer import RingWriter
from xfertop.reporter._step_work import StepWork

MAX_ERRORS = 10
TICK_NS = 1_000_000_000
LINK_CHECK_EVERY_TICKS = 2

_now_ns = time.perf_counter_ns  # CLOCK_MONOTONIC on Linux: comparable across processes of one host
_thread_id = threading.get_ident
_F_PINNED = wire.F_PINNED
_F_PARTITIONED = wire.F_PARTITIONED
_F_EPOCH_START = wire.F_EPOCH_START
_F_LOADER_WORKERS = wire.F_LOADER_WORKERS_MASK
_F_NOT_LOADER_WORKERS = ~wire.F_LOADER_WORKERS_MASK
_NO_SHAPE = object()  # _first_leaf: a leaf without a ``shape`` attribute
_DEPTHS = (1, 2, 3, 4)  # _first_leaf's loop: a constant tuple, no range() made every step
_SEQUENCES = (list, tuple)
#: Steps at whose batch a CUDA tensor names the GPU clock's device (later ones: _tick asks torch). They
#: also learn which element of a tuple batch counts its samples (_samples_index).
_BATCH_NAMES_DEVICE_STEPS = 8


class StepClock:
    def __init__(self, make_writer: Callable[[], RingWriter]) -> None:
        self._make_writer = make_writer
        self.writer: RingWriter | None = None
        self.started = False
        self.disabled = False
        self.errors, self.last_error, self.steps_written = 0, "", 0
        self.device = ""
        self.gap = GpuGap()
        self.loaders = LoaderWorkers()
        self.fetches = ZippedFetches()  # which next() on another loader joins the open step
        #: Which host tensors are pinned, by address (copy timing's and to_device's copies ask it).
        self.pinned = PinnedMemo()
        self.work = StepWork(self.gap, self.fail, self._learn_device, self.pinned)
        #: The loop's own work blocked or not, on sampled steps (_ready_clock.py): when the last was
        #: sampled, the thread it was read on, and what the samples gathered.
        self._ready_sampled_ns = 0
        self._ready_thread = 0
        self._blocked = BlockedShares()
        self.copy_timing = False  # set by `xfertop run`'s copy timing before the first step
        #: Steps in which torch.cuda.empty_cache() was called (`xfertop run`; note_empty_cache), and the
        #: count and the steps written at the last tick.
        self.empty_cache_calls = 0
        self._tick_empty_cache_calls, self._tick_steps = 0, 0
        self._empty_cache_every_step = False
        self._empty_cache_step = -1  # the step in which a call was last counted: one a step
        #: Parameter bytes of the optimizers seen, and those in host memory (note_optimizer_bytes).
        self._optimizer_bytes, self._optimizer_host_bytes = 0, 0
        self.cpu_optimizer = False
        #: Called where a step closes whose work started but whose model's end was not seen (the model
        #: watch, once it has taken its hooks off the model: _step_parts.ModelWatch).
        self.on_step_without_model_end: Callable[[], None] | None = None
        #: `xfertop run` sees the model's calls, backward and optimizer steps: the step's first work is its
        #: first copy or model call (else the batch's arrival, as far as anyone can tell).
        self.partitioning = False
        #: A step's model has ended under partitioning: the watch sees this job's model, so a step with
        #: no copy nor model call had none (_close).
        self._model_seen = False
        self._main_thread = threading.main_thread().ident
        self.loader_off_thread = False  # a watched loader was read off the main thread (said once)
        #: The thread that read it, until an optimizer step says whether that thread is a prefetcher's
        #: (the optimizer steps on another thread) or the training loop's own
        #: (optimizer_stepped_with_loader_off_thread).
        self.loader_thread = 0
        self._open_source = 0  # the iterator whose next() opened the open step
        self._previous_source = 0  # ... and the one that opened the step before it
        self._open_loader = 0  # ... and the loader it iterates (0: not known)
        self._joining = False  # a next() on another loader joins the open step (ZippedFetches)
        self._joining_loader = 0  # ... and its workers flags: the step's loader if it waits longer
        #: A pass over another loader runs inside the open step, after its model (validation every N
        #: steps): that iterator's next() calls are no boundaries, their waits are the step's data wait
        #: and the rest of the pass its loop work after the model, until a next() on any other iterator.
        self.nested_source = 0
        #: Iterators a pass over which trained (an optimizer stepped in it): the loop's own batches, never
        #: a pass inside another step again (two loaders trained in turn, ``next(it_a)``, ``next(it_b)``).
        self._training_sources: set[int] = set()
        #: ... and their loaders, where a pass began before the step's model (``next(iter(loader_b))``
        #: each step: a new iterator every time, a second input, not a pass).
        self._training_loaders: set[int] = set()
        #: The pass under way began before the open step's model (validation at the top of the loop's
        #: body): the work's hooks are off until it ends (_end_pass_before_model).
        self._pass_before_model = False
        self._nested_loader = 0  # the loader of the pass under way (0: not known)
        self._nested_batches = 0  # the pass's batches so far (its waits: StepWork.waits_after_model)
        self._in_nested = False  # the next() under way is the nested pass's: its batch opens no step
        #: The last watched iteration ran out and no watched next() came since: 1, plus the optimizer steps
        #: since (0: an iteration is under way, or none ended). See optimizer_step_past_loader_end.
        self.past_loader_end = 0
        #: How long the last iteration's final next() took after its last step closed (a loader without
        #: persistent workers shuts them down there): the next iteration's first wait, not loop time.
        self._teardown_ns = 0
        self._next_flags = 0  # flags for the step about to open (epoch start)
        # The open step (its work: self.work).
        #: A step is open: its batch arrived and its boundary has not come yet (read by the hooks, which run
        #: inside the job's calls: an attribute, not a property, is one frame less).
        self.is_open = False
        self._start_ns = self._wait_ns = self._samples = 0
        self._samples_at = 0  # the element of a tuple batch whose length is its samples (_samples_index)
        self._flags = 0  # the ring flags of its boundaries (epoch start) and of its gap
        self._opened_ns = 0  # when the open step's batch arrived (next() returned)
        # Between steps.
        self._wait_began_ns = self._last_exit_ns = 0
        self._last_close_ns = 0  # when the step closed last
        self._blocks_seen = False  # step() blocks mark this process's steps
        self._block_depth = 0  # step() blocks open around the current step (0: not theirs)
        self._next_tick_ns = 0
        self._ticks = 0
        self._last_tick_ns = 0
        #: CPU time of each other Python thread at the last tick (_busy_thread), by thread ident.
        self._thread_cpu_ns: dict[int, int] = {}
        self._busy_thread = ("", 0)  # what the ring says now

    # -- failure handling ---------------------------------------------------------------------------------
    def fail(self, exc: BaseException) -> None:
        """Count an internal error; switch the clock off after MAX_ERRORS. Never raises."""
        try:
            self.errors += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            if self.errors >= MAX_ERRORS:
                self.disabled = True
                self.gap.timer = None
                self.gap.marking = False
                self.work.closed()
            if self.writer is not None:
                self.writer.set_word(wire.H_ERRORS, self.errors)
                if self.disabled:
                    self.set_state_flag(wire.STATE_DISABLED)
        except Exception:  # the ring itself may be what broke
            self.disabled = self.errors >= MAX_ERRORS

    def _start(self) -> bool:
        """Open the ring, at the first boundary; False where none can be opened (the clock is off)."""
        self.started = True
        try:
            self.writer = self._make_writer()
        except Exception as exc:  # no ring: training goes on unobserved
            self.disabled = True
            self.last_error = str(exc)
            print(f"xfertop: {exc}; the step clock is off for this process.", file=sys.stderr)
            return False
        if self.copy_timing:
            self.set_state_flag(wire.STATE_COPY_TIMING)
        if self.cpu_optimizer:
            self.set_state_flag(wire.STATE_CPU_OPTIMIZER)
        return True

    def note_optimizer_bytes(self, host_bytes: int, total_bytes: int) -> None:
        """An optimizer seen for the first time steps ``total_bytes`` of parameters, ``host_bytes`` of them
        in host memory. Its step is the CPU's arithmetic where host memory holds at least half of the
        bytes of every optimizer seen (wire.STATE_CPU_OPTIMIZER; written when the ring opens if it is not
        open yet): a small optimizer of its own on the CPU (SAC's temperature, say) beside a GPU model's
        is not the job's optimizer step."""
        self._optimizer_host_bytes += host_bytes
        self._optimizer_bytes += total_bytes
        cpu = self._optimizer_bytes > 0 and 2 * self._optimizer_host_bytes >= self._optimizer_bytes
        if cpu == self.cpu_optimizer:
            return
        self.cpu_optimizer = cpu
        try:
            self.set_state_flag(wire.STATE_CPU_OPTIMIZER, cpu)
        except Exception as exc:
            self.fail(exc)

    def mark_copy_timing(self) -> None:
        try:
            self.set_state_flag(wire.STATE_COPY_TIMING)
        except Exception as exc:
            self.fail(exc)

    def note_empty_cache(self) -> None:
        """torch.cuda.empty_cache() was called: counted once for the open step (calls outside the steps, or
        many in one, say nothing of how often the steps pay for it)."""
        if self.is_open and self._empty_cache_step != self.steps_written:
            self._empty_cache_step = self.steps_written
            self.empty_cache_calls += 1

    def set_state_flag(self, flag: int, on: bool = True) -> None:
        """The ring header's state ``flag`` set (or, ``on`` false, cleared); nothing before the ring opens."""
        writer = self.writer
        if writer is not None:
            flags = writer.words[wire.H_STATE_FLAGS]
            writer.set_word(wire.H_STATE_FLAGS, flags | flag if on else flags & ~flag)

    def loader_ended(self) -> None:
        """A watched loader's next() raised StopIteration. Its time after the last step closed (the
        workers' shutdown, without persistent_workers) moves the next iteration's start back: the loader's
        cost between epochs is that iteration's first wait, as its workers' start-up is, and the time the
        script's own code takes between them stays outside every step."""
        try:
            if self._in_nested and self._pass_before_model:
                self._end_pass_before_model()
            elif not self._in_nested:
                self.past_loader_end = 1  # the loop's own loader ran out (not a pass inside a step)
            self._in_nested = False  # a nested pass's last next(): no batch comes
            if not self.is_open and self._last_close_ns:
                self._teardown_ns = _now_ns() - self._last_close_ns
        except Exception as exc:
            self.fail(exc)

    def optimizer_stepped_with_loader_off_thread(self) -> None:
        """An optimizer step after a watched loader was read off the main thread: on that same thread,
        the whole training loop runs there (a service that trains on a thread of its own) and its steps
        are the loop's, measured as any; on another, the reader is a prefetcher (as first said)."""
        if _thread_id() == self.loader_thread:
            self.loader_off_thread = False
            self._main_thread = self.loader_thread  # the loop's thread: later epochs' reads are not off it
            self.set_state_flag(wire.STATE_LOADER_OFF_THREAD, on=False)
        self.loader_thread = 0  # decided either way

    def flag_next_step(self, flag: int) -> None:
        """The step about to open (at after_next) carries ``flag`` too."""
        self._next_flags |= flag

    def has_loop_boundaries(self) -> bool:
        """A watched loader's next() calls, or step() blocks, mark this process's steps."""
        return bool(self.loaders.longest_iteration or self._block_depth or self._blocks_seen)

    def optimizer_step_past_loader_end(self) -> bool:
        """An optimizer step after the watched loader's last iteration ran out, with no watched next() since:
        whether it is a step boundary. A loop that trains on without asking its loader again
        (``itertools.cycle(loader)`` replays the first epoch's batches) marks its steps by its optimizer
        steps, as a loop without a DataLoader does: session 35's j89 showed its first epoch's 32 steps and
        none of the 3,000 after, with that epoch's worker start-up for its verdict. Not the first
        PAST_END_OPTIMIZER_STEPS of them: an epoch's closing optimizer step (gradient accumulation's
        flush) comes between epochs, and a loader read one batch ahead (Lightning's prefetching fetcher)
        runs out before the last batch's optimizer steps (two for a GAN). Nor where step() blocks mark
        the steps. Each such step carries the last batch's samples."""
        self.past_loader_end += 1
        if self.past_loader_end <= 1 + PAST_END_OPTIMIZER_STEPS or self._blocks_seen:
            return False
        samples = self._samples  # the step that opens has no batch of its own: the loader's last size
        self.before_next()
        self.after_next(None)
        self._samples = samples
        return True

    def count_iteration_step(self, steps: int, workers: int | None, source: int = 0, wait: int = 0) -> None:
        """An iteration reached ``steps`` steps, ``wait`` ns waited (_loader_workers.py); a new workers
        count goes to the ring at once, not at the next tick (a short job may see none)."""
        if self.loaders.count(steps, workers, source, wait) and self.writer is not None:
            self.writer.set_word(wire.H_WORKERS, self.loaders.workers or 0)

    # -- loader boundaries --------------------------------------------------------------------------------
    def next_in_iteration(self, flags: int, source: int) -> None:
        """before_next for an iteration's second and later next() calls: where the open step came from
        the same iterator and no pass runs inside it (the usual step of a single loader), only the step
        closes; anything else takes before_next's whole path."""
        if not self.is_open or source != self._open_source or self.nested_source:
            self.before_next(0, flags, 0, source)
            return
        now = _now_ns()
        try:
            self._joining = self._in_nested = False
            self._teardown_ns = self.past_loader_end = 0
            self._close(now)
            self._wait_began_ns = now
            self._next_flags = flags
            self._previous_source = source
        except Exception as exc:
            self.fail(exc)

    def before_next(
        self, iter_began_ns: int = 0, flags: int = 0, iter_ns: int = 0, source: int = 0, loader: int = 0
    ) -> None:
        """At next(loader). For an iteration's first next(): ``iter_began_ns``, when iter(loader) was
        called, and ``iter_ns``, how long it took: worker start-up is data wait of the epoch's first
        step, not compute of the step before it, nor a gap between steps. ``flags``: the step's record flags
        from its loader (every step: its workers count, wire.loader_workers_flags; the first: the epoch's
        start). ``source``: the iterator asked (0: unknown); a next() on another one right after the open
        step's batch arrived joins that step (_loader_workers.ZippedFetches). ``loader``: at an
        iteration's first next(), the loader it iterates (0: not known; _nests)."""
        now = _now_ns()
        try:
            if not self.started and not self._start():
                return
            if source:  # a watched loader's next() (an optimizer step's boundary passes none)
                self.past_loader_end = 0
            # Asked at an iteration's first next(), where a prefetch thread shows itself.
            if flags & _F_EPOCH_START and not self.loader_off_thread and _thread_id() != self._main_thread:
                self.loader_off_thread = True  # a prefetch thread of the job's own: its waits, not the loop's
                self.loader_thread = _thread_id()
                self.set_state_flag(wire.STATE_LOADER_OFF_THREAD)
            if (
                source != self._open_source  # first: false at every step of a single loader
                and source
                and self.is_open
                and self._open_source
                and not self._block_depth
                and (
                    (
                        fetched := not self.work.flags & wire.F_COPIED
                        and self.fetches.joins(
                            now - self._opened_ns, self.partitioning, bool(self.work.first_work_ns)
                        )
                    )
                    or self._second_input(source, loader)
                )
            ):
                self._joining = True
                # One fetch as the loop sees it (zip asks its loaders in one call, before any work of the
                # step's): the time since the first batch arrived is the step's data wait too.
                self._wait_began_ns = self._opened_ns if fetched else now
                self._flags |= flags & _F_NOT_LOADER_WORKERS
                self._joining_loader = flags & _F_LOADER_WORKERS
                return
            self._joining = False  # a joining next() that ended the loop (StopIteration) never arrived
            self._in_nested = False  # ... nor did a nested pass's last one
            passed = self.nested_source  # a pass ran in the open step until this next()
            if passed:
                self._nested_batches += 1
                # A pass longer than the longest iteration seen is no validation pass: the loop moved on
                # to another loader (a `break`, then a new one). Its batches are steps from here on.
                if source == passed and self._nested_batches <= self.loaders.longest_iteration:
                    self._in_nested = True
                    self._wait_began_ns = now
                    self.gap.pass_waits()
                    if now >= self._next_tick_ns and self.writer is not None:
                        self._tick(now)  # a long evaluation pass: the ring's heartbeat goes on
                    return
                self.nested_source = 0  # the training loader's next(), or any other: the pass is over
                self._pass_before_model = False
                self.gap.pass_ends()
            # (A pass may end in another: a persistent validation iterator, exhausted, made anew.) The
            # cheap test first: a single loader's next() is never another iterator's.
            if source != self._open_source and self._nests(source, loader, passed, flags, iter_began_ns):
                self.nested_source, self._nested_batches = source, 1
                self._nested_loader = loader
                self._pass_before_model = not self.work.model_end_ns
                self.gap.pass_begins(after_model=not self._pass_before_model)
                self._in_nested = True
                # The pass's iter() (its workers starting) is its first wait, where it was called in this
                # step: an iterator made before it (at setup) has waited for nothing of the step's.
                self._wait_began_ns = iter_began_ns if self._opened_ns <= iter_began_ns < now else now
                # Its first step's flags (an iteration's start, workers started) are the open step's too.
                self._flags |= flags & _F_NOT_LOADER_WORKERS | wire.F_NESTED_PASS
                self._joining_loader = flags & _F_LOADER_WORKERS
                self.work.closed()  # its model calls and syncs: the loop's own work after the model
                return
            boundary = now
            # iter() inside the open step (after its batch arrived): the boundary moves back to it. With
            # no step open (the last iteration ended), only iter()'s own time is added, never the gap
            # before it (an iterator made at setup, a checkpoint between epochs).
            if iter_began_ns and self.is_open and iter_began_ns >= self._start_ns + self._wait_ns:
                boundary = min(iter_began_ns, now)
            elif iter_ns > 0 and not self.is_open:
                boundary = max(now - iter_ns - self._teardown_ns, self._last_close_ns)
            self._teardown_ns = 0
            if self.is_open:
                self._close(boundary)
            self._wait_began_ns = boundary
            self._next_flags = flags
            self._previous_source, self._open_source = self._open_source, source
            if loader:
                self._open_loader = loader
        except Exception as exc:
            self.fail(exc)

    def after_next(self, batch: Any) -> int:
        """The batch arrived: the step opens (or, joining, its wait grows). Returns the wait in ns."""
        now = _now_ns()
        try:
            if self._in_nested:
                # A nested pass's batch opens no step: its wait is the open step's (the loop waits for a
                # DataLoader), the rest of the pass the loop's work after the model. The step's loader is
                # the pass's where the pass waited longer: the advice names the loader that waits.
                self._in_nested = False
                self.gap.pass_batch_arrives()
                wait = now - self._wait_began_ns
                work = self.work
                work.waited_after_model(wait)
                self._wait_ns += wait
                nested = work.waits_after_model
                if nested > self._wait_ns - nested and self._joining_loader:  # more than its own loader's
                    self._flags = self._flags & _F_NOT_LOADER_WORKERS | self._joining_loader
                return wait
            wait = now - self._wait_began_ns
            if self._joining:
                self._joining = False
                if wait > self._wait_ns and self._joining_loader:  # the loader that held the step up
                    self._flags = self._flags & _F_NOT_LOADER_WORKERS | self._joining_loader
                self._wait_ns += wait
                self._opened_ns = now
                self.fetches.opened()
                self.work.marks_from(now)  # the loop's own work starts after its last batch
                return wait
            self._open_step(self._wait_began_ns, wait, batch)
            return wait
        except Exception as exc:
            self.fail(exc)
            return 0

    def trained_in_nested_pass(self) -> None:
        """An optimizer stepped during a pass taken for a nested one: its loader is a training loader (the
        loop left the other with a `break` for it, or it was the step's second input, read before the
        model), and its next next() is a step boundary."""
        self._training_sources.add(self.nested_source)
        if self._pass_before_model:
            if self._nested_loader:
                self._training_loaders.add(self._nested_loader)
            self._pass_before_model = False
            self.work.open = True  # too late for this step's model marks; the steps after it are right
        self.nested_source = 0
        self.gap.pass_ends()
        self.gap.drop_periodic_span()
        self._flags &= ~wire.F_NESTED_PASS

    def _second_input(self, source: int, loader: int) -> bool:
        """A next() before the open step's model on an iterator (or, at an iteration's first next(), a
        loader) that trained in a pass taken for one: the step's second input, read apart from the first
        (``x = x.to(device)`` between them, or ``next(iter(aux))``), joining the step whenever it comes. Left
        to zip's 200 us window, such a fetch split its step in two now and then (44 or 63 steps for 40)."""
        return not self.work.model_end_ns and (
            source in self._training_sources or (loader != 0 and loader in self._training_loaders)
        )

    def _end_pass_before_model(self) -> None:
        """The pass that began before the open step's model ran out (StopIteration): its waits are the
        step's data wait, the rest of it the loop's own work before the model, whose marks start now."""
        self._pass_before_model = False
        self.nested_source = 0
        self.gap.pass_ends()
        self.work.pass_ended_before_model()

    def _nests(
        self, source: int, loader: int, passed: int = 0, flags: int = 0, iter_began_ns: int = 0
    ) -> bool:
        """A next() on iterator ``source`` starts a pass inside the open step: the step came from another
        iterator, which has not ended (its last next() would have closed the step), and the step's model
        has run (`xfertop run` sees it: a pass before the model is a second input, zipped or not). Its
        first next() (validation every N steps, a Trainer's eval_steps) or a later one (a validation batch
        after each step from a persistent iterator, ``next(val_it)``). Counted as steps of their own, a
        pass's batches made more steps than the job trained (session 29's j63; session 30's j70, two for
        each), and a 50-step window saw its periodic worker starts by its phase. Not a pass: a new iterator
        of the step's own loader (``next(iter(loader))`` every step), nor one over which an optimizer has
        stepped before (``_training_sources``), nor the one whose batch opened the step before (a second
        input read apart from the first opened this one: the training loader's next() is no pass).
        ``passed``: a pass ran in the open step until this next() (an exhausted validation iterator made
        anew: the new one's pass follows it; the step's work stopped counting when the first began).

        Before the step's model, a pass begins only at a new iteration's first next(), its iter() called
        inside the open step (``flags``, ``iter_began_ns``): validation at the top of the loop's body
        (`if step % 40 == 0: evaluate()`). Session 31's j76 read 4,041 steps for 2,967 trained, and 3.4x
        its samples/s: each validation batch was a step. A pass that trains is a second input instead
        (trained_in_nested_pass): its loader is never taken for one again."""
        if not (
            source
            and self.is_open
            and self._open_source
            and source != self._open_source
            and source != self._previous_source
            and source != passed
            and source not in self._training_sources
            and loader != self._open_loader
        ):
            return False
        work = self.work
        if passed or (work.model_end_ns and work.open):  # after a pass: its model had run
            return True
        return bool(
            work.open
            and flags & _F_EPOCH_START
            and iter_began_ns >= self._start_ns + self._wait_ns
            and loader not in self._training_loaders
        )

    # -- step() blocks ----------------------------------------------------------------------------------
    def enter_step(self) -> None:
        now = _now_ns()
        try:
            if not self.started and not self._start():
                return
            if self._block_depth:
                self._block_depth += 1  # nested: the outermost block is the step
                return
            if self.is_open and not self._blocks_seen and not self.loaders.longest_iteration:
                self._close(now)  # an optimizer step opened it before the first block: blocks own the steps
            elif self.is_open:
                return  # inside a watch() step: the loop owns the boundaries
            self._blocks_seen = True
            start = self._last_exit_ns or now
            self._open_step(start, now - start, None)
            self._block_depth = 1
        except Exception as exc:
            self.fail(exc)

    def exit_step(self) -> None:
        now = _now_ns()
        try:
            if not self._block_depth:
                return  # this block did not open the step: leave it to its owner
            self._block_depth -= 1
            if self._block_depth:
                return
            if self.is_open:
                self._close(now)
            self._last_exit_ns = now
        except Exception as exc:
            self.fail(exc)

    # -- internals ------------------------------------------------------------------------------------------
    def _open_step(self, start_ns: int, wait_ns: int, batch: Any) -> None:
        self.is_open = True
        self._start_ns = start_ns
        self._wait_ns = wait_ns
        self._flags = self._next_flags
        self._next_flags = 0
        opened_ns = self._opened_ns = start_ns + wait_ns
        if self.fetches.watching:
            self.fetches.opened()
        work = self.work
        work.opened(self.steps_written, opened_ns)
        if self.partitioning and opened_ns - self._ready_sampled_ns >= READY_SAMPLE_NS:
            self._ready_sampled_ns = opened_ns
            work.ready_at_open = work.ready.ready_ns()  # -1: unreadable, a true value: sampled
            self._ready_thread = work.ready.thread_reads
            if work.ready_at_open < 0:
                work.ready_at_open = 0
        self._samples = 0
        gap = self.gap
        gap.step_opens()
        if batch is not None:
            # The usual (inputs, targets) with a tensor first is read here; _first_leaf searches the rest.
            shape: Any = _NO_SHAPE
            if type(batch) in _SEQUENCES and batch:
                if self.steps_written < _BATCH_NAMES_DEVICE_STEPS:
                    self._samples_at = _samples_index(batch)
                try:
                    leaf = batch[self._samples_at]
                except IndexError:  # a shorter batch than those learnt from
                    leaf = batch[0]
                shape = getattr(leaf, "shape", _NO_SHAPE)
            if shape is _NO_SHAPE:
                leaf, shape = _first_leaf(batch)
            if shape:
                self._samples = int(shape[0])
                # A CUDA batch names the device at the first steps; later, the once-a-second tick looks.
                if (
                    gap.timer is None
                    and self.steps_written < _BATCH_NAMES_DEVICE_STEPS
                    and getattr(leaf, "is_cuda", False)
                ):
                    self._use_cuda_device(leaf.device.index)
        if not self.partitioning and gap.after_prev is not None:
            # Nothing tells the model's calls apart: the step's work may start as soon as its batch is here.
            self._flags |= gap.measure(self.steps_written)

    def _close(self, now: int) -> None:
        self.is_open = False
        work = self.work
        work.open = work.awaits_first_work = False  # work.closed(), inline: once a step
        self._last_close_ns = now
        writer = self.writer
        if writer is None:
            return
        step = self.steps_written
        gap = self.gap
        flags = self._flags | work.flags
        if gap.marking or gap.after_prev is not None:  # else no event to ask or hand on (most steps)
            flags |= gap.step_closing(step, now)
        if gap.periodic_span is not None:
            flags |= gap.close_periodic_span(step)
        if work.h2d_bytes and not work.any_pageable:  # every host-to-device copy was from pinned memory
            flags |= _F_PINNED
        loop_pre_ns, loop_post_ns = work.loop_ns(now)
        if work.ready_at_open:
            self._sampled(work, now, writer)
        if self.partitioning and work.first_work_ns:
            flags |= _F_PARTITIONED
            if work.model_end_ns:
                self._model_seen = True
            elif self.on_step_without_model_end is not None:
                self.on_step_without_model_end()
        elif self._model_seen and self.partitioning:
            # No copy nor model call in this step, where the watch has seen the model's: all of it after
            # the wait is the loop's own (a Hugging Face Trainer with gradient accumulation fetches the
            # cycle's batches first, steps that hold only their waits). Unflagged, three steps in four
            # left a job's shares "model and loop not told apart" (session 30's j69).
            flags |= _F_PARTITIONED
            loop_pre_ns = max(0, now - self._start_ns - self._wait_ns - work.copy_cpu_ns - work.sync_ns)
        writer.write_step(
            step,
            self._start_ns,
            now - self._start_ns,
            self._wait_ns,
            work.copy_cpu_ns,
            loop_pre_ns,
            work.sync_ns,
            gap.gap_ns,
            work.h2d_bytes,
            self._samples,
            flags,
            loop_post_ns,
        )
        self.steps_written = step + 1
        if gap.unresolved:
            gap.step_written(writer)
        if now >= self._next_tick_ns:
            self._tick(now)

    def _sampled(self, work: StepWork, now: int, writer: RingWriter) -> None:
        """A sampled step closes: how much of the loop's own work was blocked, to the ring's header."""
        (pre_wall, pre_ready), (post_wall, post_ready) = work.sampled_parts(now)
        if work.ready.thread_reads != self._ready_thread:
            return  # read on two threads: their clocks do not compare
        blocked = self._blocked
        blocked.add(pre_wall, pre_ready, after_step=False)
        blocked.add(post_wall, post_ready, after_step=True)
        words = (wire.H_LOOP_PRE_BLOCKED, wire.H_LOOP_POST_BLOCKED)
        for word, permille in zip(words, blocked.permilles(), strict=True):
            if permille is not None:
                writer.set_word(word, permille + 1)

    def _learn_device(self, device: Any) -> None:
        """A copy went to ``device`` (a torch.device): the GPU clock runs on the first CUDA one seen."""
        if self.gap.timer is None and device.type == "cuda":
            self._use_cuda_device(device.index)
        elif not self.device:
            self._set_device(str(device))

    def _use_cuda_device(self, index: int | None) -> None:
        device = self.gap.use_cuda_device(index)
        if device is not None:
            self._set_device(device)

    def _set_device(self, device: str) -> None:
        self.device = device
        if self.writer is not None:
            self.writer.set_device(device)

    def _tick(self, now: int) -> None:
        """Once a second: the ring's header (_refresh_header), a CUDA device found in use, and the pinned
        memo forgotten (_copy.PinnedMemo: an address may have changed hands)."""
        self._next_tick_ns = now + TICK_NS
        self._ticks += 1
        self.pinned.clear()
        assert self.writer is not None
        _refresh_header(self.writer, self.loaders.workers, self._ticks % LINK_CHECK_EVERY_TICKS == 0)
        self._judge_empty_cache()
        _refresh_debug_switches(self.writer, empty_cache_every_step=self._empty_cache_every_step)
        busy = _busy_thread(self._thread_cpu_ns, now - self._last_tick_ns if self._last_tick_ns else 0)
        self._last_tick_ns = now
        if busy != self._busy_thread:
            self._busy_thread = busy
            self.writer.set_busy_thread(*busy)
        index = _cuda_device_found() if self.gap.timer is None else None
        if index is not None:
            self._use_cuda_device(index)

    def _judge_empty_cache(self) -> None:
        """Whether torch.cuda.empty_cache() ran in most of the steps since the last judgement."""
        calls = self.empty_cache_calls - self._tick_empty_cache_calls
        steps = self.steps_written - self._tick_steps
        if steps >= EMPTY_CACHE_MIN_STEPS:  # fewer: one call more or less decides, so the last answer stands
            self._empty_cache_every_step = calls * EMPTY_CACHE_EVERY_STEPS >= steps
            self._tick_empty_cache_calls, self._tick_steps = self.empty_cache_calls, self.steps_written

    def resolve_pending(self) -> None:
        """Patch in the GPU times of every pending step whose events have completed; never waits."""
        try:
            if self.writer is not None:
                self.gap.resolve_pending(self.writer)
        except Exception as exc:
            self.fail(exc)

    def close(self) -> None:
        """At exit: write the step a ``break`` left open (if its model ran), resolve what the GPU has
        finished, then mark the ring closed."""
        try:
            if self.is_open and not self.disabled and self.work.model_end_ns:
                # No next() will close it: it ends where its model's work (and any sync after) ended,
                # which is not now: no sample of its work after the step.
                self.work.ready_at_open = 0
                self._close(self.work.model_end_ns + self.work.sync_after_model_ns())
        except Exception as exc:
            self.fail(exc)
        self.resolve_pending()
        try:
            if self.writer is not None and not self.disabled:
                # A loop shorter than a tick (1,023 steps in under a second on an H100) is judged here.
                self._judge_empty_cache()
                if self._empty_cache_every_step:
                    _refresh_debug_switches(self.writer, empty_cache_every_step=True)
        except Exception as exc:
            self.fail(exc)
        try:
            self.work.ready.close()
            if self.writer is not None:
                self.writer.close()
        except Exception as exc:
            self.fail(exc)


def _refresh_header(writer: RingWriter, workers: int | None, check_link: bool) -> None:
    """The header's counters that change between steps (workers, pinned host memory), and the ring
    file's health (recreated where someone unlinked it)."""
    if workers is not None:
        writer.set_word(wire.H_WORKERS, workers)
    pinned = pinned_host_bytes()
    if pinned is not None:
        writer.set_word(wire.H_PINNED_BYTES, pinned[0])
        writer.set_word(wire.H_PINNED_ACTIVE_BYTES, pinned[1])
    if check_link:
        writer.recreate_if_unlinked()


def _refresh_debug_switches(writer: RingWriter, empty_cache_every_step: bool = False) -> None:
    """The header's debugging-switch flags (wire.DEBUG_SWITCHES) as the process has them now: each makes
    every step slower, and a job left with one on after a debugging session cannot tell why.
    ``empty_cache_every_step``: torch.cuda.empty_cache() ran in a third of the steps or more
    (EMPTY_CACHE_EVERY_STEPS)."""
    switches = wire.STATE_EMPTY_CACHE_EVERY_STEP if empty_cache_every_step else 0
    torch = sys.modules.get("torch")
    if torch is not None:
        if torch.is_anomaly_enabled():
            switches |= wire.STATE_ANOMALY_DETECTION
        profiling = getattr(getattr(torch._C, "_autograd", None), "_profiler_enabled", None)
        if profiling is not None and profiling():
            switches |= wire.STATE_PROFILER
    if sys.gettrace() is not None:  # this thread's: the one that runs the loop's next()
        switches |= wire.STATE_TRACED
    if os.environ.get("CUDA_LAUNCH_BLOCKING") == "1":
        switches |= wire.STATE_LAUNCH_BLOCKING
    if os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING") == "1":
        switches |= wire.STATE_NO_CACHING_ALLOCATOR
    flags = writer.words[wire.H_STATE_FLAGS]
    if flags & wire.STATE_DEBUG_SWITCHES != switches:
        writer.set_word(wire.H_STATE_FLAGS, flags & ~wire.STATE_DEBUG_SWITCHES | switches)


#: Optimizer steps after a watched loader ran out that mark no step yet (optimizer_step_past_loader_end).
PAST_END_OPTIMIZER_STEPS = 2

#: torch.cuda.empty_cache() counts as called every step where it ran at least once in this many steps, judged
#: over at least EMPTY_CACHE_MIN_STEPS steps (a second's worth, or more where steps are slow).
EMPTY_CACHE_EVERY_STEPS = 3
EMPTY_CACHE_MIN_STEPS = 12


#: CPUCLOCK_PERTHREAD_MASK | CPUCLOCK_SCHED: the low bits of a thread's CPU clock id on Linux.
_THREAD_CPU_CLOCK = 6
#: A Python thread that used at least this much of a core (permille) over the last second is named: a
#: thread running Python holds the GIL for that share of the time.
BUSY_THREAD_MIN_PERMILLE = 300


def _busy_thread(seen_ns: dict[int, int], elapsed_ns: int) -> tuple[str, int]:
    """The Python thread of the job's own, other than this one (the loop's: it closes the steps) and the
    main thread, that used the most CPU since the last tick, with its share of a core in permille, where
    that is BUSY_THREAD_MIN_PERMILLE or more; else ("", 0). ``seen_ns`` keeps each thread's CPU clock
    between ticks. The DataLoader's pin-memory thread (torch's, copying without the GIL) and xfertop's
    own threads are left out."""
    here, main = threading.get_ident(), threading.main_thread().ident
    busiest, busiest_ns = "", 0
    now_ns: dict[int, int] = {}
    for thread in threading.enumerate():
        ident, tid = thread.ident, thread.native_id
        if ident is None or tid is None or ident in (here, main) or thread.name.startswith("xfertop"):
            continue
        if getattr(getattr(thread, "_target", None), "__module__", "").startswith("torch."):
            continue
        try:
            # The thread's CPU clock by its kernel id (Linux's MAKE_THREAD_CPUCLOCK), not through
            # pthread_getcpuclockid: that reads the pthread's descriptor, gone once a thread that
            # ended meanwhile is freed; an id the kernel no longer knows in this process is EINVAL.
            cpu_ns = time.clock_gettime_ns((~tid << 3) | _THREAD_CPU_CLOCK)
        except OSError:  # the thread ended meanwhile
            continue
        now_ns[ident] = cpu_ns
        used = cpu_ns - seen_ns.get(ident, cpu_ns)
        if used > busiest_ns:
            busiest, busiest_ns = thread.name, used
    seen_ns.clear()
    seen_ns.update(now_ns)
    permille = busiest_ns * 1000 // elapsed_ns if elapsed_ns > 0 else 0
    return (busiest, permille) if permille >= BUSY_THREAD_MIN_PERMILLE else ("", 0)


def _cuda_device_found() -> int | None:
    """The CUDA device this process already uses (_gpu_gap.cuda_device_in_use), or None."""
    torch = sys.modules.get("torch")
    return None if torch is None else cuda_device_in_use(torch, os.environ.get("LOCAL_RANK"))


def _samples_index(batch: Sequence[Any]) -> int:
    """Which element of a tuple batch counts its samples: the one with the shortest first dimension of two
    or more (0 where none has one). The first element is usually the inputs, but a flat one is not: an
    EmbeddingBag's ``(ids, offsets, labels)`` holds every token of the batch in ``ids``, and read as
    samples it made 271,000 samples/s of 150 steps of 256 records (session 48's trial). A batch of one
    sample reads 1 from its first element; a leaf of length 1 beside longer ones is no batch's length."""
    at, shortest = 0, None
    try:
        for index, leaf in enumerate(batch[:8]):
            shape = getattr(leaf, "shape", None)
            if shape and shape[0] >= 2 and (shortest is None or shape[0] < shortest):
                at, shortest = index, shape[0]
    except Exception:  # a shape that is no sequence of ints (a library's own batch type)
        return 0
    return at


def _first_leaf(batch: Any) -> tuple[Any, Any]:
    """The batch's first leaf (a tensor, in the usual case) and its ``shape`` (None without one). The step
    clock reads the usual (inputs, targets) itself; this searches the other batches, every step."""
    for _ in _DEPTHS:  # containers four deep at most
        if isinstance(batch, _SEQUENCES):
            batch = batch[0] if batch else None
            continue
        if isinstance(batch, dict):  # before the shape: a failed getattr costs more than this test
            batch = next(iter(batch.values()), None)
            continue
        shape = getattr(batch, "shape", _NO_SHAPE)  # read once: a tensor makes a new torch.Size each time
        if shape is not _NO_SHAPE:
            return batch, shape
        if not isinstance(batch, Mapping):  # dict, and UserDict (BatchEncoding)
            return batch, None
        batch = next(iter(batch.values()), None)
    return batch, getattr(batch, "shape", None)
