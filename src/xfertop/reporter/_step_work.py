"""The open step's work, as `xfertop run`'s hooks (and ``to_device``/``mark_copied``) report it: copies
(bytes, host time, pageable or pinned), the model's calls and their end, syncs, checkpoints; and from
their marks, the host's step in parts.

The host's step in parts, on the host clock (``perf_counter_ns``), from these marks within one step:
- the batch arrives (next() returns): the step's own time starts;
- the step's first work: its first copy or the model's first call (``starting``, ``copied``): what came
  before it is the loop's own work before the model (``loop_pre``);
- the model's last backward or optimizer step, or its forward where no backward follows
  (``model_ended``): what comes after it is the loop's own work after the step (``loop_post``);
- where a step calls the model again before any backward (a policy acting between an environment's
  steps), the host time from a forward's return to the model's next call (``model_returned``,
  ``model_called_again``) is the loop's own work too, booked with ``loop_pre``: it makes the model's
  next input;
- syncs with the device (``synced``): host time blocked until the GPU catches up.
Copies and syncs are their own parts wherever they happen, so the parts never overlap: ``loop_pre``
and ``loop_post`` leave out the syncs and copies inside them, and the model is what is left.

The step's first work is also where the GPU's idle gap is asked (_gpu_gap.py: it must be asked before
the work is queued). The step clock opens and closes steps and reads these figures when it writes one.

These hooks run several times a step inside the job's own calls, so each is one frame: the marks are
kept here, not in an object of their own, and no hook calls another (benchmarks/reporter_bytecodes.py
counts the frames and bytecodes a step; docs/reporter.md, "Session 25"). Every hook is fail-open: an
error goes to ``fail`` (the clock's count), never to the training loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from xfertop import wire
from xfertop.reporter._copy import PinnedMemo
from xfertop.reporter._gpu_gap import CHECKPOINT, GpuGap
from xfertop.reporter._ready_clock import ReadyClock

_now_ns = time.perf_counter_ns
_F_COPIED = wire.F_COPIED
_F_SYNCED = wire.F_SYNCED
_F_COPIED_PAGEABLE_NON_BLOCKING = wire.F_COPIED | wire.F_PAGEABLE_NON_BLOCKING


class StepWork:
    def __init__(
        self,
        gap: GpuGap,
        fail: Callable[[BaseException], None],
        learn_device: Callable[[Any], None],
        pinned: PinnedMemo,
    ) -> None:
        self._gap = gap
        self._pinned = pinned
        self._pinned_known = pinned.known  # tensor_moved's look-up in place
        self._fail = fail
        self._learn_device = learn_device
        self._last_target: Any = None
        self.open = False  # a step is open (set by the clock: opened, closed)
        #: On a sampled step (the clock sets ready_at_open), the loop thread's ready time at its batch's
        #: arrival, its first work and its model's end (_ready_clock.py); 0 on other steps.
        self.ready = ReadyClock()
        self.ready_at_open = self.ready_at_first_work = self.ready_at_model_end = 0
        #: The open step has seen no copy or model call yet: copy timing asks this before it parses a
        #: ``.to()``'s target, so that only a step's first copy pays for it.
        self.awaits_first_work = False
        self.step = 0  # the open step's index, for the GPU gap it may ask
        self.copy_cpu_ns = 0
        self.h2d_bytes = 0
        self.any_pageable = False
        self.flags = 0  # the ring flags the step's work set
        # The host's marks in the open step.
        self.opened_ns = 0  # its batch arrived
        self.first_work_ns = 0  # 0: no copy or model call yet in this step
        self.model_end_ns = 0  # 0: the model has not finished a backward or optimizer step yet
        self.sync_ns = 0  # host time blocked in syncs so far
        self._sync_at_first_work = 0
        self._sync_at_model_end = 0
        self._copy_at_model_end = 0
        #: A nested pass's waits for its DataLoader in the open step (the clock's data wait, not loop work).
        self.waits_after_model = 0
        #: ... of a pass that ran before the step's first work: data wait, not the loop's work before it.
        self._before_work_ns = 0
        #: The loop's own work between the model's calls before any backward (model_called_again), and the
        #: marks of its last forward's return (0: none since its last call, backward or optimizer step).
        self.between_ns = 0
        self._returned_ns = self._sync_at_return = self._copy_at_return = 0

    def waited_after_model(self, wait_ns: int) -> None:
        """A pass over another loader inside the step, after its model, waited ``wait_ns`` for a batch:
        data wait, not the loop's own work after the model (StepClock._nests)."""
        self.waits_after_model += wait_ns

    def opened(self, step: int, opened_ns: int) -> None:
        """A step opened (its batch arrived at ``opened_ns``): nothing done yet."""
        self.open = self.awaits_first_work = True
        self.step = step
        self.copy_cpu_ns = self.h2d_bytes = self.flags = 0
        self.any_pageable = False
        # The host's marks, as marks_from sets them (inline: once a step, one frame less).
        self.opened_ns = opened_ns
        self.first_work_ns = self.model_end_ns = self.sync_ns = self.waits_after_model = 0
        self._sync_at_first_work = self._sync_at_model_end = self._copy_at_model_end = 0
        self._before_work_ns = self.between_ns = self._returned_ns = 0
        self.ready_at_open = self.ready_at_first_work = self.ready_at_model_end = 0

    def marks_from(self, opened_ns: int) -> None:
        """The host's marks start again at ``opened_ns`` (a step opens, or another loader's batch it waited
        for arrived: the loop's own work starts after the last one)."""
        self.opened_ns = opened_ns
        self.first_work_ns = self.model_end_ns = self.sync_ns = self.waits_after_model = 0
        self._sync_at_first_work = self._sync_at_model_end = self._copy_at_model_end = 0
        self._before_work_ns = self.between_ns = self._returned_ns = 0
        self.ready_at_open = 0  # the loop's work starts anew: not a sample of it

    def pass_ended_before_model(self) -> None:
        """A pass over another loader that began before the step's first work (its hooks off meanwhile)
        ended: its waits are data wait, not the loop's work before the model; the hooks count again."""
        self._before_work_ns += self.waits_after_model
        self.waits_after_model = 0
        self.open = self.awaits_first_work = True

    def closed(self) -> None:
        """The step closed (or the clock switched itself off): no hook counts towards it any more."""
        self.open = self.awaits_first_work = False

    # -- the host's step in parts, read at its close ---------------------------------------------------------
    def loop_ns(self, close_ns: int) -> tuple[int, int]:
        """The loop's own work before the model and after it, for a step that closes at ``close_ns``."""
        first_work_ns, model_end_ns = self.first_work_ns, self.model_end_ns
        pre = (
            max(0, first_work_ns - self.opened_ns - self._sync_at_first_work - self._before_work_ns)
            + self.between_ns
            if first_work_ns
            else 0
        )
        if not model_end_ns:
            return pre, 0
        post = (
            close_ns
            - model_end_ns
            - (self.sync_ns - self._sync_at_model_end)
            - (self.copy_cpu_ns - self._copy_at_model_end)
            - self.waits_after_model
        )
        return pre, max(0, post)

    def sampled_parts(self, close_ns: int) -> tuple[tuple[int, int], tuple[int, int]]:
        """On a sampled step closing at ``close_ns`` (now): (wall, ready) ns of the loop's own work before
        the model and after the step, over the spans loop_ns books to them: the waits of passes over
        other loaders left out (they are data waits), and the syncs and copies in them (their own parts).
        A sync or copy is taken as ready throughout (a CPU's memcpy; CUDA's default wait spins while
        the process's contexts are no more than its cores): a 20 ms `loss.item()` after a 5 ms sleep
        read the sleep 20% blocked. (0, -1) for a part not seen whole."""
        pre = post = (0, -1)
        if self.first_work_ns and self.ready_at_first_work > 0:
            synced = self._sync_at_first_work
            wall = self.first_work_ns - self.opened_ns - self._before_work_ns - synced
            pre = (wall, max(0, self.ready_at_first_work - self.ready_at_open - synced))
        if self.model_end_ns and self.ready_at_model_end > 0:
            ready_now = self.ready.ready_ns()
            if ready_now > 0:
                own = (self.sync_ns - self._sync_at_model_end) + (self.copy_cpu_ns - self._copy_at_model_end)
                wall = close_ns - self.model_end_ns - self.waits_after_model - own
                post = (wall, max(0, ready_now - self.ready_at_model_end - own))
        return pre, post

    def sync_after_model_ns(self) -> int:
        """Host time blocked in syncs since the model's end."""
        return self.sync_ns - self._sync_at_model_end if self.model_end_ns else 0

    # -- the hooks --------------------------------------------------------------------------------------
    def starting(self) -> None:
        """A copy or a model call is about to be issued: the step's first one ends the loop's own work
        before the model, and is where the GPU's idle gap is measured."""
        try:
            if not self.open or self.first_work_ns:
                return
            self.first_work_ns = _now_ns()
            self._sync_at_first_work = self.sync_ns
            self.awaits_first_work = False
            if self.ready_at_open:
                self.ready_at_first_work = self.ready.ready_ns()
            gap = self._gap
            if gap.after_prev is not None:
                self.flags |= gap.measure(self.step)  # only where there is a gap to ask
        except Exception as exc:
            self._fail(exc)

    def model_ended(self) -> None:
        """The model finished a backward, an optimizer step or (no backward after it) a forward: its work
        for the step is queued (the last one of the step counts). The step's ``after`` event moves here."""
        try:
            if self.open:
                self.model_end_ns = _now_ns()
                self._sync_at_model_end = self.sync_ns
                self._copy_at_model_end = self.copy_cpu_ns
                self._returned_ns = 0  # a backward since the forward: no time between its calls
                if self.ready_at_open:
                    self.ready_at_model_end = self.ready.ready_ns()
                gap = self._gap
                if gap.marking:  # called up to three times a step: no call where no event is due
                    gap.model_ended()
        except Exception as exc:
            self._fail(exc)

    def model_returned(self) -> None:
        """The watched model's forward returned: as ``model_ended``, and where the step calls the model
        again before any backward, the time until then is the loop's own (model_called_again)."""
        try:
            if self.open:
                self.model_end_ns = self._returned_ns = _now_ns()
                self._sync_at_model_end = self._sync_at_return = self.sync_ns
                self._copy_at_model_end = self._copy_at_return = self.copy_cpu_ns
                if self.ready_at_open:
                    self.ready_at_model_end = self.ready.ready_ns()
                gap = self._gap
                if gap.marking:
                    gap.model_ended()
        except Exception as exc:
            self._fail(exc)

    def model_called_again(self) -> int:
        """The watched model is called again in the open step: the host time since its forward returned,
        less the syncs and copies in it, was the loop's own work between its calls (an environment stepped
        between a policy's actions, session 48's trial: 40% of each step read as the model's). Returns it
        (ns; 0 where a backward came between, or none returned)."""
        try:
            returned = self._returned_ns
            if not self.open or not returned:
                return 0
            self._returned_ns = 0
            between = max(
                0,
                _now_ns()
                - returned
                - (self.sync_ns - self._sync_at_return)
                - (self.copy_cpu_ns - self._copy_at_return),
            )
            self.between_ns += between
            return between
        except Exception as exc:
            self._fail(exc)
            return 0

    def synced(self, sync_ns: int) -> None:
        """The loop waited ``sync_ns`` for the device (.item(), .cpu(), synchronize) just now."""
        try:
            if self.open:
                self.sync_ns += sync_ns
                self.flags |= _F_SYNCED
        except Exception as exc:
            self._fail(exc)

    def checkpointed(self) -> None:
        """torch.save begins now, inside the open step (the caller checks that the clock has one open): the
        step holds a checkpoint. Also during a pass over another loader in it, when the hooks' work is
        closed: a save after the step's validation is still the step's."""
        self.flags |= wire.F_CHECKPOINT
        self._gap.periodic_begins(CHECKPOINT)

    def checkpoint_saved(self) -> None:
        """That torch.save returned."""
        self._gap.periodic_ends()

    def tensor_moved(self, source: Any, moved: Any, non_blocking: Any, copy_cpu_ns: int) -> None:
        """Copy timing saw ``source.to()``/``.cuda()`` return ``moved``, a new tensor, ``copy_cpu_ns`` of host
        time after it began (it said ``starting`` before, where the copy targets a device): a host-to-device
        copy is booked (bytes, pageable or pinned), a device-to-host one is a sync (the loop waited for the
        GPU). ``non_blocking``: the call's argument, truthy or not.

        Runs at every ``.to()`` of the process, so it is one frame: the pinned memo's known answers are
        read in place (benchmarks/reporter_bytecodes.py weighs it)."""
        try:
            if moved.is_cpu:
                if source.is_cuda and self.open:  # device to host: the loop waits for the GPU
                    self.sync_ns += copy_cpu_ns
                    self.flags |= _F_SYNCED
                return
            if not source.is_cpu:
                return  # device to device: no host-to-device bytes
            h2d_bytes = source.nbytes
            if not h2d_bytes:
                return
            if self._gap.timer is None:  # until the GPU clock runs, every copy may name its device
                device = moved.device
                # Equality, not identity: torch hands over a new torch.device object for every copy.
                if device != self._last_target:
                    self._last_target = device
                    self._learn_device(device)
            if not self.open:
                return
            self.copy_cpu_ns += copy_cpu_ns
            self.h2d_bytes += h2d_bytes
            try:
                pinned = self._pinned_known.get(source.data_ptr())
            except Exception:  # no storage (a fake tensor while torch.compile traces): the memo asks
                pinned = None
            if pinned is None:
                pinned = self._pinned.pinned(source)
            if pinned:
                self.flags |= _F_COPIED
            else:
                self.any_pageable = True
                self.flags |= _F_COPIED_PAGEABLE_NON_BLOCKING if non_blocking else _F_COPIED
        except Exception as exc:
            self._fail(exc)

    def copied(
        self,
        h2d_bytes: int,
        any_pageable: bool,
        pageable_non_blocking: bool,
        copy_cpu_ns: int,
        device: Any,
    ) -> None:
        """The loop marked a copy (to_device, mark_copied) of ``h2d_bytes`` to ``device`` that ended now,
        having taken ``copy_cpu_ns`` of host time. (Copy timing's copies go to ``tensor_moved``.)"""
        try:
            # Equality, not identity: copy timing hands over a new torch.device object for every copy.
            if device is not None and device != self._last_target:
                self._last_target = device
                self._learn_device(device)
            if not self.open:
                return
            gap = self._gap
            if not self.first_work_ns:  # the copy began the step's work
                self.first_work_ns = _now_ns() - copy_cpu_ns
                self._sync_at_first_work = self.sync_ns
                self.awaits_first_work = False
                if gap.after_prev is not None:
                    # Late: the copy is queued already, so a drained stream reads busy.
                    self.flags |= gap.measure(self.step)
            self.copy_cpu_ns += copy_cpu_ns
            self.h2d_bytes += h2d_bytes
            self.any_pageable = self.any_pageable or any_pageable
            self.flags |= _F_COPIED_PAGEABLE_NON_BLOCKING if pageable_non_blocking else _F_COPIED
        except Exception as exc:
            self._fail(exc)
