"""The step clock: the host's step in parts, and the GPU's own idle gap before each step's work.

A step runs from one ``next()`` call on the loader to the next one (or from one ``step()`` exit to
the next). Its host time is split into parts that add up to its wall (wait, the loop's own work before
the model, copies, the model, syncs, the loop's own work after it: _host_parts.py); where a CUDA device
is in use, the GPU's idle gap before the step's first work is measured with events (_gpu_timer.py) and
patched in once they complete. Every method is fail-open: an internal error is counted, and after
``MAX_ERRORS`` of them the clock switches itself off for good.

Sampling: every step gets the host clock, but only some get their gap measured, so that the clock's own
host time in CUDA calls stays within budget (_gpu_sampling.py).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from xfertop import wire
from xfertop.reporter._gpu_sampling import GpuSampling
from xfertop.reporter._gpu_timer import MAX_RESOLVED_PER_BOUNDARY, GpuTimer, PendingGap
from xfertop.reporter._host_memory import pinned_host_bytes
from xfertop.reporter._host_parts import HostParts
from xfertop.reporter._ring_writer import RingWriter

MAX_ERRORS = 10
TICK_NS = 1_000_000_000
LINK_CHECK_EVERY_TICKS = 2
#: A next() on another loader that begins this soon after the open step's batch arrived, with no copy in
#: between, fetches part of the same step: ``for a, b in zip(loader_a, loader_b)``, Lightning's
#: CombinedLoader, a second (unlabelled) iterator read right after the first. Its wait joins the step's
#: instead of closing a step that did no work. A training step's own host work (forward, backward,
#: optimizer step) takes longer than this even for a tiny model on a GPU, where it only queues kernels.
JOINED_FETCH_NS = 200_000

_now_ns = time.perf_counter_ns  # CLOCK_MONOTONIC on Linux: comparable across processes of one host


class StepClock:
    def __init__(self, make_writer: Callable[[], RingWriter]) -> None:
        self._make_writer = make_writer
        self.writer: RingWriter | None = None
        self.started = False
        self.disabled = False
        self.errors = 0
        self.last_error = ""
        self.steps_written = 0
        self.gpu: GpuTimer | None = None
        self.device = ""
        self.dataloader_workers: int | None = None
        #: Steps of the longest single iteration over a loader so far: the loader that feeds training
        #: (a validation pass or Lightning's sanity check is shorter) gives the workers count.
        self.longest_iteration = 0
        #: Which iteration names the workers (id of its iterator wrapper, never a reference: a finished
        #: epoch's iterator must be free to shut its workers down) and its mean wait per step.
        self._namer = 0
        self._namer_mean_wait_ns = 0.0
        self._open_source = 0  # the iterator whose next() opened the open step
        self._joining = False  # a next() on another loader joins the open step (JOINED_FETCH_NS)
        self.copy_timing = False  # set by `xfertop run`'s copy timing before the first step
        self._main_thread = threading.main_thread().ident
        self.loader_off_thread = False  # a watched loader was read off the main thread (said once)
        self._next_flags = 0  # flags for the step about to open (epoch start)
        self._open = False
        self._start_ns = 0
        self._wait_ns = 0
        self._copy_cpu_ns = 0
        self._h2d_bytes = 0
        self._samples = 0
        self._flags = 0
        self._any_pageable = False
        self.parts = HostParts()
        #: `xfertop run` sees the model's calls, backward and optimizer steps: the step's first work is its
        #: first copy or model call (else the batch's arrival, as far as anyone can tell).
        self.partitioning = False
        self._wait_began_ns = 0
        self._last_exit_ns = 0
        self._last_target: Any = None
        self._opened_ns = 0  # when the open step's batch arrived (next() returned)
        self._last_close_ns = 0  # when the step closed last
        self._blocks_seen = False  # step() blocks mark this process's steps
        self._block_depth = 0  # step() blocks open around the current step (0: not theirs)
        self._next_tick_ns = 0
        self._ticks = 0
        # The GPU gap (see _gpu_timer.py); which steps measure it: self.sampling (_gpu_sampling.py).
        self._after: Any = None  # this step's "work queued" event, for the next step's gap
        self._after_prev: Any = None  # the previous step's, until this step's first work asks it
        self._marks_end = False  # this step records ``after``: the next one gets its gap measured
        self._gap_ns = wire.NO_VALUE  # the open step's gap: measured at once (0), pending, or not
        self.sampling = GpuSampling(
            enabled=os.environ.get("XFERTOP_GPU_SAMPLING", "").lower() not in ("off", "0", "no")
        )
        self.gpu_timed_steps = 0  # steps whose gap was measured (events asked), for benchmarks

    # -- failure handling ---------------------------------------------------------------------------------
    def fail(self, exc: BaseException) -> None:
        """Count an internal error; switch the clock off after MAX_ERRORS. Never raises."""
        try:
            self.errors += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            if self.errors >= MAX_ERRORS:
                self.disabled = True
                self.gpu = None
            if self.writer is not None:
                self.writer.set_word(wire.H_ERRORS, self.errors)
                if self.disabled:
                    self._set_state_flag(wire.STATE_DISABLED)
        except Exception:  # the ring itself may be what broke
            self.disabled = self.errors >= MAX_ERRORS

    def _start(self) -> None:
        self.started = True
        try:
            self.writer = self._make_writer()
        except Exception as exc:  # no ring: training goes on unobserved
            self.disabled = True
            self.last_error = str(exc)
            print(f"xfertop: {exc}; the step clock is off for this process.", file=sys.stderr)
            return
        if self.copy_timing:
            self._set_state_flag(wire.STATE_COPY_TIMING)

    def mark_copy_timing(self) -> None:
        try:
            self._set_state_flag(wire.STATE_COPY_TIMING)
        except Exception as exc:
            self.fail(exc)

    def _set_state_flag(self, flag: int) -> None:
        writer = self.writer
        if writer is not None:
            writer.set_word(wire.H_STATE_FLAGS, writer.words[wire.H_STATE_FLAGS] | flag)

    @property
    def is_open(self) -> bool:
        """A step is open: its batch arrived and its boundary has not come yet."""
        return self._open

    def has_loop_boundaries(self) -> bool:
        """A watched loader's next() calls, or step() blocks, mark this process's steps."""
        return bool(self.longest_iteration or self._block_depth or self._blocks_seen)

    def count_iteration_step(
        self, steps: int, workers: int | None, source: int = 0, wait_ns: int = 0
    ) -> None:
        """An iteration over a loader (``source``: its iterator) reached ``steps`` steps, having waited
        ``wait_ns`` in all. The longest one names the workers; of iterations as long, within a step (loaders
        zipped: they advance by turns), the one that waits longer a step: the loader that holds training
        up, whichever of them ``zip`` asks first."""
        mean_wait = wait_ns / steps if steps else 0.0
        longest = self.longest_iteration
        namer = bool(source) and source == self._namer  # the iteration that names them goes on
        longer = steps > longest + 1 or (steps > longest and not source)
        waits_more = steps >= longest and mean_wait > self._namer_mean_wait_ns
        if not (namer or longer or waits_more):
            return
        self.longest_iteration = max(longest, steps)
        self._namer = source
        self._namer_mean_wait_ns = mean_wait
        if workers is not None and workers != self.dataloader_workers:
            self.dataloader_workers = workers
            if self.writer is not None:  # at once, not at the next tick: a short job may see none
                self.writer.set_word(wire.H_WORKERS, workers)

    # -- loader boundaries --------------------------------------------------------------------------------
    def before_next(self, iter_began_ns: int = 0, flags: int = 0, iter_ns: int = 0, source: int = 0) -> None:
        """At next(loader). For an iteration's first next(): ``iter_began_ns``, when iter(loader) was
        called, and ``iter_ns``, how long it took: worker start-up is data wait of the epoch's first
        step, not compute of the step before it, nor a gap between steps. ``source``: the iterator asked
        (0: unknown); a next() on another one right after the open step's batch arrived joins that step
        (JOINED_FETCH_NS)."""
        now = _now_ns()
        try:
            if not self.started:
                self._start()
                if self.disabled:
                    return
            if not self.loader_off_thread and threading.get_ident() != self._main_thread:
                self.loader_off_thread = True  # a prefetch thread of the job's own: its waits, not the loop's
                self._set_state_flag(wire.STATE_LOADER_OFF_THREAD)
            if (
                source
                and self._open
                and self._open_source
                and source != self._open_source
                and not self._block_depth
                and not self._flags & wire.F_COPIED
                and now - self._opened_ns <= JOINED_FETCH_NS
            ):
                self._joining = True
                self._wait_began_ns = now
                self._flags |= flags
                return
            self._joining = False  # a joining next() that ended the loop (StopIteration) never arrived
            boundary = now
            # iter() inside the open step (after its batch arrived): the boundary moves back to it. With
            # no step open (the last iteration ended), only iter()'s own time is added, never the gap
            # before it (an iterator made at setup, a checkpoint between epochs).
            if iter_began_ns and self._open and iter_began_ns >= self._start_ns + self._wait_ns:
                boundary = min(iter_began_ns, now)
            elif iter_ns > 0 and not self._open:
                boundary = max(now - iter_ns, self._last_close_ns)
            if self._open:
                self._close(boundary)
            self._wait_began_ns = boundary
            self._next_flags = flags
            self._open_source = source
        except Exception as exc:
            self.fail(exc)

    def after_next(self, batch: Any) -> int:
        """The batch arrived: the step opens (or, joining, its wait grows). Returns the wait in ns."""
        now = _now_ns()
        try:
            wait = now - self._wait_began_ns
            if self._joining:
                self._joining = False
                self._wait_ns += wait
                self._opened_ns = now
                self.parts.open(now)  # the loop's own work starts after its last batch
                return wait
            self._open_step(self._wait_began_ns, wait, batch)
            return wait
        except Exception as exc:
            self.fail(exc)
            return 0

    # -- step() blocks ----------------------------------------------------------------------------------
    def enter_step(self) -> None:
        now = _now_ns()
        try:
            if not self.started:
                self._start()
                if self.disabled:
                    return
            if self._block_depth:
                self._block_depth += 1  # nested: the outermost block is the step
                return
            if self._open and not self._blocks_seen and not self.longest_iteration:
                self._close(now)  # an optimizer step opened it before the first block: blocks own the steps
            elif self._open:
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
            if self._open:
                self._close(now)
            self._last_exit_ns = now
        except Exception as exc:
            self.fail(exc)

    def checkpointed(self) -> None:
        """torch.save ran now (`xfertop run`): the open step holds a checkpoint."""
        try:
            if self._open:
                self._flags |= wire.F_CHECKPOINT
        except Exception as exc:
            self.fail(exc)

    # -- the model, copies and syncs (`xfertop run`) -------------------------------------------------------
    def work_starting(self) -> None:
        """A copy or a model call is about to be issued: the step's first one ends the loop's own work
        before the model, and is where the GPU's idle gap is measured (it must be asked before the work
        is queued)."""
        try:
            if self._open and self.parts.work_started(_now_ns()):
                self._measure_gap()
        except Exception as exc:
            self.fail(exc)

    def model_ended(self) -> None:
        """The model finished a backward, an optimizer step or (no backward after it) a forward: its work
        for the step is queued. The step's ``after`` event moves here."""
        try:
            if not self._open:
                return
            self.parts.model_ended(_now_ns(), self._copy_cpu_ns)
            if self._marks_end and self.gpu is not None:
                self._record_after(self.gpu)
        except Exception as exc:
            self.fail(exc)

    def synced(self, sync_ns: int) -> None:
        """The loop waited ``sync_ns`` for the device (.item(), .cpu(), synchronize) just now."""
        try:
            if self._open:
                self.parts.synced(sync_ns)
                self._flags |= wire.F_SYNCED
        except Exception as exc:
            self.fail(exc)

    def copied(
        self,
        h2d_bytes: int,
        any_pageable: bool,
        pageable_non_blocking: bool,
        copy_cpu_ns: int,
        device: Any,
        seen: bool = False,
    ) -> None:
        """A copy of ``h2d_bytes`` to ``device`` ended now, having taken ``copy_cpu_ns`` of host time.
        ``seen``: found by copy timing (which said ``work_starting`` before it) rather than marked by the
        loop (to_device, mark_copied)."""
        try:
            if device is not None and device is not self._last_target:
                self._learn_device(device)
            if not self._open:
                return
            if not seen and self.parts.work_started(_now_ns() - copy_cpu_ns):
                self._measure_gap()  # late: the copy is queued already, so a drained stream reads busy
            self._copy_cpu_ns += copy_cpu_ns
            self._h2d_bytes += h2d_bytes
            self._any_pageable = self._any_pageable or any_pageable
            self._flags |= wire.F_COPIED | (wire.F_PAGEABLE_NON_BLOCKING if pageable_non_blocking else 0)
        except Exception as exc:
            self.fail(exc)

    # -- internals ------------------------------------------------------------------------------------------
    def _open_step(self, start_ns: int, wait_ns: int, batch: Any) -> None:
        self._open = True
        self._start_ns = start_ns
        self._wait_ns = wait_ns
        self._copy_cpu_ns = 0
        self._h2d_bytes = 0
        self._flags = self._next_flags
        self._next_flags = 0
        self._any_pageable = False
        self._opened_ns = start_ns + wait_ns
        self.parts.open(self._opened_ns)
        self._samples = 0
        self._gap_ns = wire.NO_VALUE
        if batch is not None:
            leaf = _first_leaf(batch)
            shape = getattr(leaf, "shape", None)
            if shape:
                self._samples = int(shape[0])
                if self.gpu is None and getattr(leaf, "is_cuda", False):
                    self._use_cuda_device(leaf.device.index)
        # Sampling: this step records ``after`` when the next one is to have its gap measured.
        self._marks_end = self.sampling.step_opens()
        if not self.partitioning and self.gpu is not None:
            # Nothing tells the model's calls apart: the step's work may start as soon as its batch is here.
            self._measure_gap()

    def _measure_gap(self) -> None:
        """At the step's first work: ask whether the GPU still works on the step before (no gap) or has
        drained (an event now; the gap resolves later). See _gpu_timer.py."""
        after = self._after_prev
        gpu = self.gpu
        if after is None or gpu is None:
            return
        began = _now_ns()
        self._after_prev = None
        if not after.query():
            self._gap_ns = 0
            gpu.release(after)
        else:
            first = gpu.record()
            if first is None:  # a CUDA graph is being captured: no gap this step
                gpu.release(after)
            else:
                gpu.add(PendingGap(self.steps_written, after, first))
                self._gap_ns = wire.NO_VALUE
                self._flags |= wire.F_GPU_PENDING
                self.gpu_timed_steps += 1
        self.sampling.spent_ns += _now_ns() - began

    def _record_after(self, gpu: GpuTimer) -> None:
        began = _now_ns()
        if self._after is None:
            self._after = gpu.record()
        else:
            gpu.re_record(self._after)  # the model's last call of the step is the one that counts
        self.sampling.spent_ns += _now_ns() - began

    def _close(self, now: int) -> None:
        self._open = False
        self._last_close_ns = now
        writer = self.writer
        if writer is None:
            return
        gpu = self.gpu
        if gpu is not None:
            self._close_gpu(gpu, now)
        flags = self._flags
        if self._h2d_bytes and not self._any_pageable:  # only host-to-device copies can be pinned
            flags |= wire.F_PINNED
        if self.partitioning and self.parts.first_work_ns:
            flags |= wire.F_PARTITIONED
        step = self.steps_written
        writer.write_step(
            step,
            self._start_ns,
            now - self._start_ns,
            self._wait_ns,
            self._copy_cpu_ns,
            self.parts.loop_pre_ns(),
            self.parts.sync_ns,
            self._gap_ns,
            self._h2d_bytes,
            self._samples,
            flags,
            self.parts.loop_post_ns(now, self._copy_cpu_ns),
        )
        self.steps_written = step + 1
        if gpu is not None:
            if gpu.pending_count:  # after the write: this very step's gap may resolve at once
                gpu.resolve(self._on_resolved)
            if gpu.dropped_steps:
                self._mark_dropped(gpu)
        if now >= self._next_tick_ns:
            self._tick(now)

    def _close_gpu(self, gpu: GpuTimer, now: int) -> None:
        """The step's GPU bookkeeping at its end: a gap still to ask (no work was seen), its ``after``
        event handed to the next step, the sampling rate revised."""
        began = _now_ns()
        if self._after_prev is not None:
            self._measure_gap()  # no copy or model call was seen: the step's end is its first work
        if self._marks_end and self._after is None:
            self._after = gpu.record()  # no backward or optimizer step seen: the step's end
        self._after_prev, self._after = self._after, None
        self.sampling.step_closed(self._marks_end, self.sampling.spent_ns + _now_ns() - began, now)

    def _on_resolved(self, step: int, gap_ns: int) -> None:
        assert self.writer is not None
        self.writer.patch_gpu(step, gap_ns, wire.F_GPU_RESOLVED, wire.F_GPU_PENDING)

    def _mark_dropped(self, gpu: GpuTimer) -> None:
        assert self.writer is not None
        for step in gpu.dropped_steps:
            self.writer.patch_gpu(step, wire.NO_VALUE, wire.F_GPU_DROPPED, wire.F_GPU_PENDING)
        dropped_total = self.writer.words[wire.H_GPU_DROPPED] + len(gpu.dropped_steps)
        self.writer.set_word(wire.H_GPU_DROPPED, dropped_total)
        gpu.dropped_steps.clear()

    def _learn_device(self, device: Any) -> None:
        """A copy went to ``device`` (a torch.device): the GPU clock runs on the first CUDA one seen."""
        self._last_target = device
        if self.gpu is None and device.type == "cuda":
            self._use_cuda_device(device.index)
        elif not self.device:
            self._set_device(str(device))

    def _use_cuda_device(self, index: int | None) -> None:
        torch = sys.modules.get("torch")
        if torch is None:
            return
        if index is None:
            index = torch.cuda.current_device()
        self.gpu = GpuTimer(torch, index)
        self._set_device(f"cuda:{index}")

    def _set_device(self, device: str) -> None:
        self.device = device
        if self.writer is not None:
            self.writer.set_device(device)

    def _tick(self, now: int) -> None:
        """Once a second: header counters, pinned host memory, the ring file's health."""
        self._next_tick_ns = now + TICK_NS
        self._ticks += 1
        writer = self.writer
        assert writer is not None
        if self.dataloader_workers is not None:
            writer.set_word(wire.H_WORKERS, self.dataloader_workers)
        pinned = pinned_host_bytes()
        if pinned is not None:
            writer.set_word(wire.H_PINNED_BYTES, pinned[0])
            writer.set_word(wire.H_PINNED_ACTIVE_BYTES, pinned[1])
        if self._ticks % LINK_CHECK_EVERY_TICKS == 0:
            writer.recreate_if_unlinked()
        if self.gpu is None:
            torch = sys.modules.get("torch")
            index = None if torch is None else cuda_device_in_use(torch, os.environ.get("LOCAL_RANK"))
            if index is not None:
                self._use_cuda_device(index)

    def resolve_pending(self) -> None:
        """Patch in the GPU times of every pending step whose events have completed; never waits."""
        try:
            gpu = self.gpu
            if gpu is not None and self.writer is not None:
                for _ in range(gpu.max_pending // MAX_RESOLVED_PER_BOUNDARY + 1):
                    gpu.resolve(self._on_resolved)
        except Exception as exc:
            self.fail(exc)

    def close(self) -> None:
        """At exit: write the step a ``break`` left open (if its model ran), resolve what the GPU has
        finished, then mark the ring closed."""
        try:
            if self._open and not self.disabled and self.parts.model_end_ns:
                # No next() will close it: it ends where its model's work (and any sync after) ended.
                self._close(self.parts.model_end_ns + self.parts.sync_after_model_ns())
        except Exception as exc:
            self.fail(exc)
        self.resolve_pending()
        try:
            if self.writer is not None:
                self.writer.close()
        except Exception as exc:
            self.fail(exc)


def cuda_device_in_use(torch: Any, local_rank: str | None) -> int | None:
    """The GPU this process computes on, when nothing told us (no to_device, no CUDA batch), or None.

    Only a device where this process already reserved memory is taken (memory_allocated drops to 0
    between steps when the batch is freed), so the clock never opens a CUDA
    context on a GPU the job does not use (every DDP rank on GPU 0). LOCAL_RANK is asked first.
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


def _first_leaf(batch: Any) -> Any:
    for _ in range(4):
        if isinstance(batch, dict):
            batch = next(iter(batch.values()), None)
        elif isinstance(batch, (list, tuple)):
            batch = batch[0] if batch else None
        elif not hasattr(batch, "shape") and isinstance(batch, Mapping):  # UserDict (BatchEncoding)
            batch = next(iter(batch.values()), None)
        else:
            return batch
    return batch
