"""The marks that split a step's host time into its parts (`xfertop run` with copy timing, and
`xfertop.watch`).

- The model's first call in a step ends the loop's own work before the model. The model is found, not
  named: while looking, a global forward pre-hook notes the first module with parameters that each step
  calls (augmentation modules have none); once the same module has come first in ``AGREEING_STEPS``
  steps, the global hook is removed and hooks on that one module remain (a global hook would put every
  module call of the job on nn.Module's slow path, ~1 us each).
- ``Tensor.backward``, optimizer steps (a global post hook: ``watch_optimizer_steps``) and that module's
  forward end mark where the model's work for the step ends: what follows is the loop's own work after it.
- ``Tensor.item``, ``.tolist``, ``.cpu`` of a CUDA tensor and ``torch.cuda.synchronize`` are syncs: host
  time blocked until the GPU catches up.

Every wrapper calls the original with the same arguments and returns its result unchanged; inside code
that torch.compile traces they step aside (no hook body runs while compiling).
"""

from __future__ import annotations

import functools
import importlib
import time
import weakref
from collections.abc import Callable
from typing import Any

from xfertop.reporter import (
    note_model_ended,
    note_optimizer_step,
    note_sync,
    note_work_starting,
    open_step,
    partitioning_installed,
)
from xfertop.reporter._timed_copies import install_copy_timing

#: Steps in which the same module must come first before it is taken for the model.
AGREEING_STEPS = 3
#: Steps after which the search stops anyway, with the last module found (or none).
SEARCH_STEPS = 64


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
        self._step = -1  # the step whose model call was seen last
        self._searched = 0
        self._candidate: weakref.ReferenceType[Any] | None = None
        self._agreeing = 0
        self._watched: list[Any] = []  # hook handles on the model
        self._search = torch.nn.modules.module.register_module_forward_pre_hook(self._look)

    def _look(self, module: Any, _args: Any) -> None:
        if self._compiling():
            return
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

    def _settle(self, module: Any) -> None:
        self._search.remove()
        self._watched = [
            module.register_forward_pre_hook(self._model_call),
            module.register_forward_hook(self._model_return),
        ]

    def _model_call(self, _module: Any, _args: Any) -> None:
        if not self._compiling():
            note_work_starting()

    def _model_return(self, _module: Any, _args: Any, _output: Any) -> None:
        if not self._compiling():
            note_model_ended()


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

    def backward(original: Any) -> Callable[..., Any]:
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(self, *args, **kwargs)
            if not compiling():
                note_model_ended()
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

    _wrap(torch.Tensor, "backward", backward)
    for name in ("item", "tolist", "cpu"):
        _wrap(torch.Tensor, name, tensor_sync)
    _wrap(torch.cuda, "synchronize", synchronize)
    ModelWatch(torch)
    partitioning_installed()


_optimizer_hook: list[Any] = []  # the handle of the one global hook, once registered


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

    def after_optimizer_step(_optimizer: Any, _args: Any, _kwargs: Any) -> None:
        note_optimizer_step()

    _optimizer_hook.append(register(after_optimizer_step))


def install_step_marks(torch: Any, copy_timing: bool = True) -> None:
    """What splits a step into its parts, the same for `xfertop run` (by default) and `xfertop.watch`:
    copy timing, the model's calls, backward and syncs, and optimizer steps. Without ``copy_timing``
    (`--no-copy-timing`) only the optimizer steps, the boundaries of a loop with no DataLoader."""
    if copy_timing:
        install_copy_timing(torch)
        install_step_parts(torch)
    watch_optimizer_steps(torch)
