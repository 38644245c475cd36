"""The in-process step clock. Standard library and torch only; never raises into training.

    for batch in xfertop.watch(loader):                       # each next() is a step boundary
        batch = xfertop.to_device(batch, device, non_blocking=True)
        ...

Loops without a DataLoader use ``with xfertop.step():``; people who copy by hand call
``xfertop.mark_copied()`` after their ``.to()``. Importing this module does not import torch.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from xfertop import wire
from xfertop.reporter._clock import StepClock, _now_ns
from xfertop.reporter._copy import CopyNotes, move
from xfertop.reporter._identity import current_identity
from xfertop.reporter._ring_writer import RingWriter

__all__ = ["mark_copied", "status", "step", "to_device", "watch"]

T = TypeVar("T")

_clock: StepClock | None = None
_in_forked_child = False
#: Every Tensor.to/.cuda is timed (_timed_copies.py): copies are seen, not only marked.
_copy_timing = False
#: The model's calls, backward, optimizer steps and syncs are watched (_step_parts.py).
_partitioning = False
#: watch() has installed (or tried to install) both on torch: once per process.
_watch_instrumented = False
#: `xfertop probe` (reporter/_probe.py): made at the first watched next() where XFERTOP_PROBE asks for one.
_probe: Any = None
_probe_asked = bool(os.environ.get("XFERTOP_PROBE"))


class _Moving(threading.local):
    """Set on a thread while to_device moves a batch: its own .to() calls are one copy, counted by it,
    not again by `xfertop run`'s Tensor.to wrapper."""

    active = False  # every thread's value until it sets its own: a plain read, no getattr default


_moving = _Moving()


def _make_writer() -> RingWriter:
    writer = RingWriter(wire.ring_dir_path(), current_identity())
    atexit.register(_close_at_exit)
    return writer


def _get_clock() -> StepClock | None:
    global _clock
    if _clock is None:
        if _in_dataloader_worker():  # forked, spawned or forkserver: a worker never writes
            return None
        _clock = StepClock(_make_writer)
        _clock.copy_timing = _copy_timing
        _clock.partitioning = _partitioning
    return _clock


def copy_timing_installed() -> None:
    """Called by `xfertop run`'s copy timing once Tensor.to/.cuda are timed: the ring then says that a
    step without copies copied nothing (rather than that nobody looked)."""
    global _copy_timing
    _copy_timing = True
    if _clock is not None:
        _clock.copy_timing = True
        if _clock.started:
            _clock.mark_copy_timing()


def _in_dataloader_worker() -> bool:
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    try:
        return torch.utils.data.get_worker_info() is not None
    except Exception:
        return _in_forked_child  # cannot tell: a forked child stays quiet, a process of its own does not


def _close_at_exit() -> None:
    if _clock is not None:
        _clock.close()


def _after_fork_in_child() -> None:
    # The child shares the parent's mapping: the inherited clock must never write to it again. A forked
    # process that runs a watched loop of its own (a rank started with fork) gets a fresh clock and its
    # own ring; a forked DataLoader worker never gets one.
    #
    # CUDA cannot be touched in a forked child, and releasing an inherited CUDA object touches it: a
    # torch.cuda.Event finalised in a DataLoader worker aborts the worker ("CUDA error: initialization
    # error" from c10::cuda::ExchangeDevice, then std::terminate), and with it the job. So the inherited
    # clock is switched off but nothing of it is dropped: every event, stream and timer it holds stays
    # referenced for the child's whole life, past interpreter shutdown too (see _keep_forever).
    global _clock, _in_forked_child
    _in_forked_child = True
    _optimizers_seen.clear()  # a forked rank's clock is its own: it asks again
    inherited = _clock
    if inherited is not None:
        inherited.disabled = True
        _keep_forever(inherited)
    _clock = None


#: What a forked child inherited and must never release (see _after_fork_in_child).
_inherited_from_parent: list[object] = []


def _keep_forever(obj: object) -> None:
    """Keep ``obj`` alive until the process ends, even through interpreter shutdown.

    A list alone is not enough: a forked child that exits through ``sys.exit`` clears module globals at
    shutdown and would finalise the inherited events then. One reference that nothing owns (taken
    through the C API) makes the object immortal for this process; a DataLoader worker ends with
    ``os._exit`` anyway, so nothing else is ever left to free.
    """
    _inherited_from_parent.append(obj)
    try:
        import ctypes

        ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))
    except Exception:  # no ctypes (a minimal build): the list still covers the life of the child
        pass


os.register_at_fork(after_in_child=_after_fork_in_child)


# -- watch(loader) -------------------------------------------------------------------------------------
class WatchedIterator(Iterator[T]):
    """Wraps a loader's iterator: each ``next()`` closes the previous step and times the data wait."""

    def __init__(
        self,
        iterator: Iterator[T],
        clock: StepClock | None,
        workers: int | None = None,
        iter_began_ns: int = 0,
        first_flags: int = 0,
        loader: int = 0,
    ) -> None:
        self._iterator = iterator
        self._loader_id = loader  # which loader it iterates (0: not known), for the clock's first next()
        self._clock = clock
        self._workers = workers
        self._iter_began_ns = iter_began_ns
        self._iter_ns = _now_ns() - iter_began_ns if iter_began_ns else 0  # made right after iter() returned
        self._step_flags = wire.loader_workers_flags(workers)  # every step's: which loader it came from
        self._first_flags = first_flags | wire.F_EPOCH_START | self._step_flags
        self._steps = 0
        self._wait_ns = 0  # blocked in this iterator's next() in all
        self._source = id(self)  # which iterator asks, for the clock (StepClock.before_next)

    def __iter__(self) -> WatchedIterator[T]:
        return self

    def __next__(self) -> T:
        # Read once: with __getattr__ defined, every attribute read of ours takes Python's slower path.
        clock, source, steps = self._clock, self._source, self._steps
        if clock is None or clock.disabled:
            return next(self._iterator)
        try:
            if clock.fetches.watching:  # early steps, or zipped loaders: which call asks (ZippedFetches)
                clock.fetches.asked_from(sys._getframe().f_back)
            if steps:
                clock.next_in_iteration(self._step_flags, source)
            else:
                clock.before_next(
                    self._iter_began_ns, self._first_flags, self._iter_ns, source, self._loader_id
                )
        except Exception as exc:  # the clock guards itself; this is the second line of defence
            clock.fail(exc)
        # StopIteration ends the loop; the last step is already closed.
        try:
            batch = _probe_next(self._iterator) if _probe_asked else next(self._iterator)
        except StopIteration:
            clock.loader_ended()  # its workers shut down in that call: the loader's time, not the loop's
            raise
        try:
            if _probe_asked and _probe and _probe.replaying:
                clock.flag_next_step(wire.F_PROBE_REPLAY)
            wait_ns = self._wait_ns = self._wait_ns + clock.after_next(batch)
            steps = self._steps = steps + 1
            if steps >= clock.loaders.longest_iteration:
                clock.count_iteration_step(steps, self._workers, source, wait_ns)
        except Exception as exc:
            clock.fail(exc)
        return batch

    def __len__(self) -> int:
        return len(self._iterator)  # type: ignore[arg-type]

    def __bool__(self) -> bool:  # not len(): an iterator without one is truthy, as it is unwatched
        return bool(self._iterator)

    def __getattr__(self, name: str) -> Any:
        # Not set yet (copy, unpickling): no recursion through ourselves. Dunders (__deepcopy__,
        # __getstate__ on 3.10...) are the wrapper's, not the wrapped object's.
        if name == "_iterator" or (name.startswith("__") and name.endswith("__")):
            raise AttributeError(name)
        return getattr(self._iterator, name)


def _probe_next(iterator: Iterator[T]) -> T:
    """``next(iterator)`` as `xfertop probe` measures it (its phases may replay batches instead)."""
    global _probe
    if _probe is None:
        from xfertop.reporter._probe import from_environment

        _probe = from_environment() or False
    if _probe is False:
        return next(iterator)
    return _probe.next_batch(iterator)


def probe_resident(tensor: Any) -> Any:
    """For `xfertop probe`'s copy-free phase: the device copy to hand back for ``tensor``, or None."""
    probe = _probe
    return probe.resident(tensor) if probe else None


def probe_moved(tensor: Any, copy: Any) -> None:
    probe = _probe
    if probe:
        probe.moved(tensor, copy)


class Watched(Iterable[T]):
    """A loader whose iterations are step clocks; everything else is the loader's own."""

    def __init__(self, loader: Iterable[T]) -> None:
        self._loader = loader

    def __iter__(self) -> Iterator[T]:
        began = _now_ns()
        return wrap_iterator(iter(self._loader), self._loader, began)

    def __len__(self) -> int:
        return len(self._loader)  # type: ignore[arg-type]

    def __bool__(self) -> bool:  # not len(): a loader without one is truthy, as it is unwatched
        return bool(self._loader)

    def __getattr__(self, name: str) -> Any:
        # Not set yet (copy, unpickling): no recursion through ourselves. Dunders (__deepcopy__,
        # __getstate__ on 3.10...) are the wrapper's, not the wrapped object's.
        if name == "_loader" or (name.startswith("__") and name.endswith("__")):
            raise AttributeError(name)
        return getattr(self._loader, name)


def wrap_iterator(iterator: Iterator[T], loader: object = None, iter_began_ns: int = 0) -> Iterator[T]:
    """The iterator with a step clock around it (once: an already watched iterator is returned as is).

    ``iter_began_ns``: when ``iter(loader)`` was called (``_now_ns``), so that the time it took (worker
    start-up, every epoch for non-persistent workers) counts as the first step's data wait."""
    if isinstance(iterator, WatchedIterator):
        return iterator
    clock = _get_clock()
    workers: int | None = None
    flags = 0
    if clock is not None and not clock.disabled:
        try:
            found = getattr(loader, "num_workers", None)
            workers = found if isinstance(found, int) else None
            if workers and not getattr(loader, "persistent_workers", False):
                flags = wire.F_WORKERS_STARTED
        except Exception:  # a loader's own __getattr__ may raise anything: not ours to pass on
            workers = None
        if workers is not None and clock.loaders.workers is None:
            clock.loaders.workers = workers  # until a longer iteration names the training loader's
    return WatchedIterator(
        iterator, clock, workers, iter_began_ns, flags, id(loader) if loader is not None else 0
    )


def watch(loader: Iterable[T], *, instrument: bool = True) -> Watched[T]:
    """``for batch in watch(loader)``: every ``next()`` is a step boundary. Never raises of its own.

    With ``instrument`` (the default) the first call also times copies and watches the model's calls,
    backward, optimizer steps and syncs as `xfertop run` does, so the step is split into the same six
    parts (the loop's own work before and after the model told from the model). ``instrument=False``
    leaves torch alone: the step is then the wait, copies made through ``to_device`` or marked with
    ``mark_copied``, and the rest. Under `xfertop run` the run's own choice stands."""
    if instrument and not _watch_instrumented:
        _instrument_for_watch()
    return Watched(loader)


def _instrument_for_watch() -> None:
    global _watch_instrumented
    torch = sys.modules.get("torch")
    if torch is None:  # nothing to watch yet (a loop over plain Python data): asked again next time
        return
    _watch_instrumented = True
    if os.environ.get("XFERTOP_RUN") == "1" or _in_dataloader_worker():
        return
    try:
        from xfertop.reporter._step_parts import install_step_marks

        install_step_marks(torch)
    except Exception as exc:  # the parts are optional; the loop is not
        sys.stderr.write(f"xfertop.watch: the step's parts are not split ({exc}); steps are still timed.\n")


# -- copies -------------------------------------------------------------------------------------------
#: Devices seen by to_device(), parsed once: argument -> (torch.device, is the CPU).
_device_cache: dict[Any, tuple[Any, bool]] = {}


def _as_device(device: Any) -> tuple[Any, bool]:
    try:
        return _device_cache[device]
    except (KeyError, TypeError):
        import torch  # the caller is moving tensors: torch is already imported

        parsed = torch.device(device)
        entry = (parsed, parsed.type == "cpu")
        if len(_device_cache) < 64:
            with contextlib.suppress(TypeError):
                _device_cache[device] = entry
        return entry


def _plain_move(batch: T, device: Any, non_blocking: bool) -> T:
    import torch

    return move(batch, device, non_blocking, None, torch.Tensor, True)


def to_device(batch: T, device: Any, non_blocking: bool = True) -> T:
    """``batch`` with every tensor (in nested dicts, lists, tuples) moved to ``device``, timed.

    Counts host-to-device bytes, notes pageable sources and ``non_blocking`` asked of pageable memory
    (which silently turns synchronous), and marks the step's copy as done on the GPU clock.
    Errors of the copy itself (a bad device...) are the caller's and propagate as from ``.to()``.
    """
    clock = _clock if _clock is not None else _get_clock()
    if clock is None or clock.disabled:
        return _plain_move(batch, device, non_blocking)
    try:
        target, to_host = _as_device(device)
        tensor_type = sys.modules["torch"].Tensor
    except Exception as exc:  # let .to() itself say what is wrong with the device
        clock.fail(exc)
        return _plain_move(batch, device, non_blocking)
    notes = CopyNotes(clock.pinned)
    started_ns = _now_ns()
    _moving.active = True
    try:
        moved = move(batch, target, non_blocking, notes, tensor_type, to_host)
    finally:
        _moving.active = False
    copy_cpu_ns = _now_ns() - started_ns
    try:
        if notes.inspect_error is not None:
            clock.fail(notes.inspect_error)
        clock.work.copied(
            notes.h2d_bytes, notes.any_pageable, notes.pageable_non_blocking, copy_cpu_ns, target
        )
    except Exception as exc:
        clock.fail(exc)
    return moved


def mark_copied(device: Any = None) -> None:
    """Call after your own ``.to()`` copies: the GPU clock splits copy from compute here."""
    clock = _get_clock()
    if clock is None or clock.disabled:
        return
    try:
        target = None if device is None else _as_device(device)[0]
        clock.work.copied(0, False, False, 0, target)
    except Exception as exc:
        clock.fail(exc)


def note_checkpoint() -> None:
    """For `xfertop run`: torch.save was called; the open step is flagged (its wall holds the save). A save
    between steps (between epochs, after the loop) is no step's."""
    clock = _clock
    if clock is None or clock.disabled or not clock.is_open:
        return
    clock.work.checkpointed()


def note_checkpoint_saved() -> None:
    """For `xfertop run`: that torch.save returned (the GPU's clock times the save, _gpu_gap.py)."""
    clock = _clock
    if clock is None or clock.disabled or not clock.is_open:
        return
    clock.work.checkpoint_saved()


# -- the model's calls and syncs (`xfertop run`) ------------------------------------------------------
def note_work_starting() -> bool:
    """For `xfertop run`: a copy or the model's call is about to be issued (see StepWork.starting).
    Returns True where the open step's work had not started before it (this call may start it), False
    where it had. Called before every timed copy: it returns at once once the step's first work is known."""
    clock = _clock
    if clock is None or clock.disabled or clock.work.first_work_ns:
        return False
    clock.work.starting()
    return True


def step_work_started() -> bool | None:
    """Whether the open step's work (a copy or the model's call) has been seen; None between steps."""
    clock = _clock
    if clock is None or clock.disabled or not clock.is_open:
        return None
    return bool(clock.work.first_work_ns)


def call_at_steps_without_model_end(callback: Callable[[], None] | None) -> None:
    """For `xfertop run`'s model watch: ``callback`` is called where a step closes whose work started but
    whose model's end was not seen (None: no more)."""
    clock = _get_clock()
    if clock is not None:
        clock.on_step_without_model_end = callback


def open_step() -> int | None:
    """The number of the step open now, or None between steps (or with no clock)."""
    clock = _clock
    if clock is None or clock.disabled or not clock.is_open:
        return None
    return clock.steps_written


def note_model_ended() -> None:
    """For `xfertop run`: the model finished a backward, an optimizer step or a forward."""
    clock = _clock
    if clock is not None and not clock.disabled:
        clock.work.model_ended()


def note_model_returned() -> None:
    """For `xfertop run`'s model watch: the model's forward returned (StepWork.model_returned)."""
    clock = _clock
    if clock is not None and not clock.disabled:
        clock.work.model_returned()


def note_model_called_again() -> int:
    """For `xfertop run`'s model watch: the open step calls the model again; the host time since its last
    forward returned, booked as the loop's own (StepWork.model_called_again), in ns."""
    clock = _clock
    if clock is None or clock.disabled:
        return 0
    return clock.work.model_called_again()


def note_sync(sync_ns: int) -> None:
    """For `xfertop run`: the loop waited ``sync_ns`` for the device in .item(), .tolist(), .cpu() or
    synchronize."""
    clock = _clock
    if clock is not None and not clock.disabled:
        clock.work.synced(sync_ns)


def note_empty_cache() -> None:
    """For `xfertop run`: the job called torch.cuda.empty_cache() (counted: wire.STATE_EMPTY_CACHE_EVERY_STEP
    where it runs in a third of the steps or more)."""
    clock = _clock
    if clock is not None and not clock.disabled:
        clock.note_empty_cache()


def note_mark_failed(exc: BaseException) -> None:
    """For `xfertop run`'s model watch: its own bookkeeping raised inside the job's call. Counted as the
    clock's errors are (and shown as they are); never passed on to the job."""
    clock = _clock
    if clock is not None:
        clock.fail(exc)


def partitioning_installed() -> None:
    """Called by `xfertop run` once the model's calls are watched: a step's first work is its first copy
    or model call (not its batch's arrival)."""
    global _partitioning
    _partitioning = True
    if _clock is not None:
        _clock.partitioning = True


# -- optimizer steps -------------------------------------------------------------------------------------
_F_OPTIMIZER_STEPPED = wire.F_OPTIMIZER_STEPPED
#: Optimizers seen stepping, by id (their parameters' place is asked once each).
_optimizers_seen: set[int] = set()


def note_optimizer_step(optimizer: Any = None) -> None:
    """For `xfertop run`: an optimizer finished a step. In a loop that iterates no DataLoader (data already
    on the device, sliced per step) this is the step boundary; once a loader is watched, its next() calls
    are the boundaries and this does nothing. Every optimizer counts: two of them in one loop (a GAN)
    make two steps per iteration."""
    clock = _clock
    if clock is None:
        if _in_forked_child:
            return
        clock = _get_clock()  # None in a DataLoader worker
        if clock is None:
            return
    if clock.disabled:
        return
    if optimizer is not None and id(optimizer) not in _optimizers_seen:
        _note_optimizer_device(clock, optimizer)
    work = clock.work
    work.flags |= _F_OPTIMIZER_STEPPED  # (read at the open step's close; a new step's open clears it)
    # A watched loader's next() calls mark the steps (asked first: the usual loop, one call less), unless
    # the loop trains on past its loader's end without asking it again (itertools.cycle).
    if clock.loaders.longest_iteration or clock.has_loop_boundaries():
        work.model_ended()
        if clock.past_loader_end:
            try:
                if clock.optimizer_step_past_loader_end():
                    return
            except Exception as exc:
                clock.fail(exc)
                return
        if clock.nested_source:  # no validation pass trains: the loop moved on to another loader
            clock.trained_in_nested_pass()
        if clock.loader_thread:  # a loader read off the main thread, and whose thread it is undecided
            clock.optimizer_stepped_with_loader_off_thread()
        return
    try:
        work.model_ended()  # the optimizer step is the model's, not the loop's work after it
        clock.before_next()
        clock.after_next(None)
    except Exception as exc:
        clock.fail(exc)


def _note_optimizer_device(clock: StepClock, optimizer: Any) -> None:
    """How many of ``optimizer``'s parameter bytes are in host memory, told to the clock once per optimizer
    (StepClock.note_optimizer_bytes): on a GPU job whose optimizers step mostly host memory, the step is
    host arithmetic that the GPU waits for, not kernel launches, which the GPU's idle inside the model's
    step would otherwise be read as."""
    if len(_optimizers_seen) >= 4096:  # a loop that makes a new optimizer each step: asked again
        _optimizers_seen.clear()
    _optimizers_seen.add(id(optimizer))
    host = total = 0
    try:
        for group in optimizer.param_groups:
            for param in group["params"]:
                size = param.numel() * param.element_size()
                total += size
                if param.is_cpu:
                    host += size
    except Exception:  # not torch's param_groups (a wrapper of its own): nothing said
        return
    clock.note_optimizer_bytes(host, total)


# -- step() --------------------------------------------------------------------------------------------
class StepBlock:
    """``with step():`` marks one step of a loop that has no DataLoader to watch."""

    __slots__ = ()

    def __enter__(self) -> StepBlock:
        clock = _get_clock()
        if clock is not None and not clock.disabled:
            try:
                clock.enter_step()
            except Exception as exc:
                clock.fail(exc)
        return self

    def __exit__(self, *exc_info: object) -> None:
        clock = _get_clock()
        if clock is not None and not clock.disabled:
            try:
                clock.exit_step()
            except Exception as exc:
                clock.fail(exc)


_STEP_BLOCK = StepBlock()


def step() -> StepBlock:
    """A context manager around one step; the time between steps counts as data wait."""
    return _STEP_BLOCK


def status() -> dict[str, Any]:
    """What the reporter of this process is doing: ring path, steps written (and how many of them got
    the GPU clock), errors, disabled."""
    clock = _clock
    if clock is None:
        return {
            "ring_path": None,
            "steps": 0,
            "gpu_timed_steps": 0,
            "errors": 0,
            "disabled": False,
            "last_error": "",
            "device": "",
        }
    return {
        "ring_path": clock.writer.path if clock.writer is not None else None,
        "steps": clock.steps_written,
        "gpu_timed_steps": clock.gap.timed_steps,
        "errors": clock.errors,
        "disabled": clock.disabled,
        "last_error": clock.last_error,
        "device": clock.device,
    }
