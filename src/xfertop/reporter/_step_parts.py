"""The marks that split a step's host time into its parts (`xfertop run` with copy timing, and
`xfertop.watch`).

- The model's first call in a step ends the loop's own work before the model. The model is found, not
  named: while looking, a global forward pre-hook notes the first module with parameters that each step
  calls (augmentation modules have none); once the same module has come first in ``AGREEING_STEPS``
  steps, the global hook is removed and hooks on that one module remain (a global hook would put every
  module call of the job on nn.Module's slow path, ~1 us each).
- ``Tensor.backward`` and ``torch.autograd.grad``, optimizer steps (a global post hook:
  ``watch_optimizer_steps``) and that module's forward end mark where the model's work for the step
  ends: what follows is the loop's own work after it.
- The model's two hooks cost every step: torch leaves nn.Module's fast call path for a module with hooks
  (~5-8 us a hook on a small model, docs/measurements/cpu-2026-12-04-s21). Where they tell nothing the
  step does not say otherwise (its copy comes before the model's call, and a backward or optimizer step
  after it, and no work of the loop's own between the model's calls) for ``RETIRE_AFTER_STEPS`` steps
  in a row, they are taken off, and put back at the first
  step that needs them: one whose work starts without a copy (its backward ends with no work seen), or
  one that ends with no model end seen (forward only: an evaluation loop).
- A hook that torch.compile traced stays where it is: compiled code guards on the hooks it saw, and
  adding or removing one recompiles it (scenario n2 ran at 0.79-0.82 of plain on the H200 while the
  search hook's removal recompiled its model). While the search hook is on, torch.compile's warning about
  global module hooks is filtered out: the hook is ours, and the job's stderr stays its own (where the
  hook stays for good, so does the filter, and a global hook of the job's own warns no more).
- ``Tensor.item``, ``.tolist``, ``.cpu``, ``float()``, ``bool()`` and ``int()`` of a CUDA tensor and
  ``torch.cuda.synchronize`` are syncs: host time blocked until the GPU catches up. (The three built-ins
  were found in session 32: a job's ``bool(torch.isfinite(norm))`` each step, 4% of its step on the H200,
  read as the model's time.)

Every wrapper calls the original with the same arguments and returns its result unchanged; inside code
that torch.compile traces they step aside (no hook body runs while compiling). A hook's own error never
reaches the job: the model watch counts it on the clock and takes its hooks off (``ModelWatch._give_up``).
A TorchScript model takes no hooks (torch raises at registration): it is found, left without them, and its
steps' work starts at their first copy.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import time
import warnings
import weakref
from collections.abc import Callable
from typing import Any

from xfertop.reporter import (
    call_at_steps_without_model_end,
    note_empty_cache,
    note_mark_failed,
    note_model_called_again,
    note_model_ended,
    note_model_returned,
    note_optimizer_step,
    note_sync,
    note_work_starting,
    open_step,
    partitioning_installed,
    step_work_started,
)
from xfertop.reporter._job_warnings import install as install_job_warnings
from xfertop.reporter._timed_copies import install_copy_timing

#: Steps in which the same module must come first before it is taken for the model.
AGREEING_STEPS = 3
#: Steps after which the search stops anyway, with the last module found (or none).
SEARCH_STEPS = 64
#: Steps in a row in which the model's hooks told nothing new (a copy came first, a backward or optimizer
#: step after the model) before they are taken off the model.
RETIRE_AFTER_STEPS = 16
#: The loop's own work between the model's calls in a step (ns) below which the hooks told nothing new by
#: it: two views of a batch through one encoder have a few microseconds of Python between their calls.
BETWEEN_CALLS_NS = 100_000
#: The model's calls after it is found (between steps too) in which any other module with parameters
#: called between two of them says that time holds model work (ModelWatch._probe_left).
PROBE_CALLS = 8


#: What torch.compile's wrapper module says at each call while any global module hook exists: the search's
#: hook is ours, not the job's, and its warning would be a line of xfertop's in the job's stderr.
_COMPILE_HOOK_WARNING = r"Using `torch\.compile\(module\)` when there are global hooks on modules"


def _quiet_compile_warning() -> Any:
    """Ignore that warning while the search's hook is on; the filter entry, to drop once it is off."""
    warnings.filterwarnings("ignore", message=_COMPILE_HOOK_WARNING, category=UserWarning)
    return warnings.filters[0]


def _drop_filter(entry: Any) -> None:
    """Take the filter off again, so that a global hook of the job's own still warns."""
    mutated = getattr(warnings, "_filters_mutated", None)  # the warnings module's own cache reset
    if mutated is None:
        return  # left on: it hides that one warning only
    filters: Any = warnings.filters  # a list (typeshed says Sequence)
    with contextlib.suppress(Exception):  # inside the job's forward call: never raise
        filters.remove(entry)
        mutated()


def _compiling_check(torch: Any) -> Callable[[], bool]:
    compiler = getattr(torch, "compiler", None)
    check = getattr(compiler, "is_compiling", None)
    return check if callable(check) else (lambda: False)


def _has_parameters(module: Any) -> bool:
    return next(module.parameters(), None) is not None


class ModelWatch:
    """Finds the module a step calls first among those with parameters, then watches only it."""

    def __init__(self, torch: Any) -> None:
        self._compiling = _compiling_check(torch)
        self._script_module = getattr(getattr(torch, "jit", None), "ScriptModule", ())
        self._step = -1  # the step whose model call was seen last
        self._searched = 0
        self._candidate: weakref.ReferenceType[Any] | None = None
        self._agreeing = 0
        self._watched: list[Any] = []  # hook handles on the model
        self._model: weakref.ReferenceType[Any] | None = None
        #: The model is found and its hooks are on it, watched for whether they tell anything new.
        self.learning = False
        self.retired = False  # its hooks are off the model (they told nothing new for long enough)
        self._streak = 0  # steps in a row whose hooks told nothing new
        self._call_step = -1  # the step of the model's last first call, while learning
        self._copy_first = False  # in that step, a copy came before the model's call
        self._ended_later = False  # and a backward or optimizer step ended after it
        #: and the loop's own work between the model's calls in it (ns): the hooks measure it, so they stay
        self._between_ns = 0
        #: A hook of ours ran while torch.compile traced: compiled code now guards on that hook being there,
        #: and removing it would recompile that code (the whole compile again, seconds to minutes). From
        #: then on it stays: the search hook does nothing once settled (``_search_traced``), the model's
        #: hooks are not taken off (``_hooks_traced``).
        self._search_traced = False
        self._hooks_traced = False
        self._settled = False
        #: After the model is found the search's hook stays for PROBE_CALLS more of its calls, to see whether
        #: any other module with parameters runs between them (a policy's head, an RNN's output layer):
        #: then that time is the model's work too, and it is not booked as the loop's.
        self._probe_left = PROBE_CALLS
        self._gap_open = False  # the model returned and was not called again, nor a backward ran, since
        self._gaps_hold_modules = False
        self._quiet = _quiet_compile_warning()
        self._search = torch.nn.modules.module.register_module_forward_pre_hook(self._look)

    def _look(self, module: Any, _args: Any) -> None:
        # First, and nothing read before it: compiled code guards on every value a traced hook reads.
        if self._compiling():
            self._search_traced = True
            return
        if self._settled:
            # Probing the model's gaps (or kept for compiled code that traced it: see _search_traced).
            if self._gap_open and self._probe_left and self._model is not None:
                try:  # the global hook runs before the model's own: the model's next call is not another
                    if module is not self._model() and _has_parameters(module):
                        self._gaps_hold_modules = True
                except Exception:  # a module whose parameters cannot be read: keep the model whole
                    self._gaps_hold_modules = True
            return
        try:
            step = open_step()
            if step is None or step == self._step or not _has_parameters(module):
                return
            self._step = step
            note_work_starting()
            same = self._candidate is not None and self._candidate() is module
            self._agreeing = self._agreeing + 1 if same else 1
            if not same:
                self._candidate = weakref.ref(module)
            self._searched += 1
            if self._agreeing >= AGREEING_STEPS or self._searched >= SEARCH_STEPS:
                self._settle(module)
        except Exception as exc:  # inside the job's forward call: never raise
            self._give_up(exc)

    def _settle(self, module: Any) -> None:
        self._settled = True
        if isinstance(module, self._script_module):
            self._end_probe()
            return  # hooks cannot be registered on it: no model marks, nothing wrong
        self._model = weakref.ref(module)
        self._hook(module)
        self.learning = True

    def _count_probe(self) -> None:
        """One more of the model's calls probed: each first call of a step counts, and every call made
        between steps (an evaluation after training), so that the global hook never outlives the probe."""
        try:
            step = open_step()
            if step is not None and step == self._call_step:
                return  # the step's model called again: its gaps are what the probe looks at
            self._probe_left -= 1
            if not self._probe_left:
                self._end_probe()
        except Exception as exc:  # inside the job's forward call: never raise
            self._give_up(exc)

    def _end_probe(self) -> None:
        """The search's hook comes off (where compiled code has not traced it)."""
        self._probe_left = 0
        if not self._search_traced:
            self._search.remove()
            _drop_filter(self._quiet)

    def _give_up(self, exc: BaseException) -> None:
        """One of our hooks raised: count it, take the hooks off (those compiled code has not traced), stop
        watching. The step's other marks (copies, backward, optimizer steps, syncs) go on."""
        self._settled = True
        self.learning = self.retired = False
        self._probe_left = 0
        with contextlib.suppress(Exception):
            call_at_steps_without_model_end(None)
        if not self._search_traced:
            with contextlib.suppress(Exception):
                self._search.remove()
            _drop_filter(self._quiet)  # (never raises)
        if not self._hooks_traced:
            for handle in self._watched:
                with contextlib.suppress(Exception):
                    handle.remove()
            self._watched = []
        note_mark_failed(exc)

    def _hook(self, module: Any) -> None:
        self._watched = [
            module.register_forward_pre_hook(self._model_call),
            module.register_forward_hook(self._model_return),
        ]

    def _model_call(self, _module: Any, _args: Any) -> None:
        if self._compiling():
            self._hooks_traced = True
            return
        if self._probe_left:
            self._count_probe()
        if not self.learning:  # the hooks stay for good (compiled code traced them): the first work only
            note_work_starting()
            return
        try:
            step = open_step()
            if step is None:
                return  # between steps
            if step == self._call_step:  # the step's model called again (accumulation, a policy acting)
                self._gap_open = False
                if not self._gaps_hold_modules:
                    self._between_ns += note_model_called_again()
                return
            self._gap_open = False
            # The step before, now whole: its copy came first, a backward or optimizer step after the
            # model, and no work of the loop's own between the model's calls.
            told_nothing_new = self._copy_first and self._ended_later and self._between_ns < BETWEEN_CALLS_NS
            self._streak = self._streak + 1 if told_nothing_new else 0
            self._call_step = step
            self._copy_first = not note_work_starting()
            self._ended_later = False
            self._between_ns = 0
            if self._streak >= RETIRE_AFTER_STEPS:
                self._retire()
        except Exception as exc:  # inside the job's forward call: never raise
            self._give_up(exc)

    def _model_return(self, _module: Any, _args: Any, _output: Any) -> None:
        if self._compiling():
            self._hooks_traced = True
        else:
            self._gap_open = self.learning
            note_model_returned()

    def ended_after_the_model(self) -> None:
        """A backward or an optimizer step ended (its wrapper says so, after ``note_model_ended``)."""
        try:
            self._gap_open = False
            if self.learning:
                self._ended_later = self._call_step == open_step()
            elif self.retired and step_work_started() is False:
                self._rehook()  # the step's work started with no copy before it: the model's call is needed
        except Exception as exc:  # inside the job's backward() or optimizer step: never raise
            self._give_up(exc)

    def _retire(self) -> None:
        if self._hooks_traced:  # compiled code guards on the model's hooks: taking them off recompiles it
            self.learning = False
            return
        for handle in self._watched:
            handle.remove()
        self._watched = []
        self.learning = False
        self.retired = True
        call_at_steps_without_model_end(self._rehook)

    def _rehook(self) -> None:
        """Put the hooks back on the model (a step needed them) and learn again."""
        call_at_steps_without_model_end(None)
        self.retired = False
        module = self._model() if self._model is not None else None
        if module is None:
            return
        self._hook(module)
        self.learning = True
        self._streak = 0
        self._call_step = -1


def _wrap(owner: Any, name: str, make: Callable[[Any], Callable[..., Any]]) -> None:
    original = getattr(owner, name, None)
    if original is None or getattr(original, "_xfertop_wrapped", False):
        return
    wrapper = functools.wraps(original)(make(original))
    wrapper._xfertop_wrapped = True  # type: ignore[attr-defined]
    setattr(owner, name, wrapper)


def install_step_parts(torch: Any) -> None:
    """Watch the model, backward and syncs of this process (see the module docstring)."""
    compiling = _compiling_check(torch)
    now_ns = time.perf_counter_ns

    def ends_the_model(original: Any) -> Callable[..., Any]:
        # Tensor.backward, and torch.autograd.grad: backward by another name (torch.func.grad's per-sample
        # gradients, gradient penalties, meta-learning). Session 35's j90 (vmap over torch.func.grad, a
        # hand-written update) read loop-bound at 66-79% while its truth put 80% in the model: its model
        # seemed to end with the forward.
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            if not compiling():
                note_model_ended()
                if watch.learning or watch.retired:
                    watch.ended_after_the_model()
            return result

        return wrapper

    def tensor_sync(original: Any) -> Callable[..., Any]:
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not self.is_cuda or compiling():
                return original(self, *args, **kwargs)
            began = now_ns()
            result = original(self, *args, **kwargs)
            note_sync(now_ns() - began)
            return result

        return wrapper

    def synchronize(original: Any) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            began = now_ns()
            result = original(*args, **kwargs)
            note_sync(now_ns() - began)
            return result

        return wrapper

    def empty_cache(original: Any) -> Callable[..., Any]:
        # It waits for the device (cudaFree synchronises) and hands the allocator's free blocks back: a
        # sync, and counted (STATE_EMPTY_CACHE_EVERY_STEP). A no-op before CUDA is initialised.
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if not torch.cuda.is_initialized():
                return original(*args, **kwargs)
            began = now_ns()
            result = original(*args, **kwargs)
            note_sync(now_ns() - began)
            note_empty_cache()
            return result

        return wrapper

    watch = ModelWatch(torch)
    _model_watches.append(watch)
    _wrap(torch.Tensor, "backward", ends_the_model)
    _wrap(torch.autograd, "grad", ends_the_model)
    # float(loss), `if torch.isfinite(norm):` and int(mask.sum()) wait for the GPU as .item() does.
    for name in ("item", "tolist", "cpu", "__float__", "__bool__", "__int__"):
        _wrap(torch.Tensor, name, tensor_sync)
    _wrap(torch.cuda, "synchronize", synchronize)
    _wrap(torch.cuda, "empty_cache", empty_cache)
    partitioning_installed()


_optimizer_hook: list[Any] = []  # the handle of the one global hook, once registered
#: The model watch of install_step_parts (one a process), for the optimizer steps' hook to tell.
_model_watches: list[ModelWatch] = []


def watch_optimizer_steps(torch: Any) -> None:
    """Optimizer steps end the model's work in a step, and are the step boundaries of a loop with no
    DataLoader (a public, global hook; registered once per process)."""
    if _optimizer_hook:
        return
    register = getattr(
        importlib.import_module("torch.optim.optimizer"), "register_optimizer_step_post_hook", None
    )
    if register is None:  # torch < 2.0: no global hook; such loops go unobserved
        return

    def after_optimizer_step(optimizer: Any, _args: Any, _kwargs: Any) -> None:
        note_optimizer_step(optimizer)
        for watch in _model_watches:  # none under --no-copy-timing; one otherwise
            if watch.learning:  # (a retired watch asks at backward: a step's work started by then)
                watch.ended_after_the_model()

    _optimizer_hook.append(register(after_optimizer_step))


def install_step_marks(torch: Any, copy_timing: bool = True) -> None:
    """What splits a step into its parts, the same for `xfertop run` (by default) and `xfertop.watch`:
    copy timing, the model's calls, backward and syncs, and optimizer steps. Without ``copy_timing``
    (`--no-copy-timing`) only the optimizer steps, the boundaries of a loop with no DataLoader. Warnings
    torch raises inside a wrapped call keep naming the job's line (_job_warnings.py)."""
    install_job_warnings()
    if copy_timing:
        install_copy_timing(torch)
        install_step_parts(torch)
    watch_optimizer_steps(torch)
