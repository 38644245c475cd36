"""Inside a process started by `xfertop run`: watch every DataLoader without a code change.

Nothing is imported eagerly: a one-name import hook waits for ``torch`` to finish importing, then
wraps ``DataLoader.__iter__`` (each ``next()`` becomes a step boundary) and, with copy timing on,
``Tensor.to`` / ``Tensor.cuda``. Until torch is imported the hook costs one string comparison per import.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from xfertop.reporter._step_parts import install_step_marks


class AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``callback(module)`` right after the module ``name`` has been executed, once."""

    def __init__(self, name: str, callback: Callable[[ModuleType], None]) -> None:
        self._name = name
        self._callback = callback

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self._name:
            return None
        sys.meta_path.remove(self)
        spec = None
        for finder in list(sys.meta_path):  # the finders the import would ask: an editable install's too
            find_spec = getattr(finder, "find_spec", None)
            spec = find_spec(fullname, path, target) if find_spec is not None else None
            if spec is not None:
                break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader: Any = spec.loader
        original_exec = loader.exec_module
        callback = self._callback

        def exec_module(module: ModuleType) -> None:
            original_exec(module)
            try:
                callback(module)
            except Exception as exc:  # instrumentation is optional; the import is not
                print(
                    f"xfertop run: could not instrument torch ({exc}); the job runs unobserved.",
                    file=sys.stderr,
                )

        loader.exec_module = exec_module
        return spec


def patch_dataloader(torch: Any) -> None:
    import time

    from xfertop.reporter import wrap_iterator

    now_ns = time.perf_counter_ns  # the step clock's clock

    data_loader = torch.utils.data.DataLoader
    original_iter = data_loader.__iter__
    if getattr(original_iter, "_xfertop_wrapped", False):
        return

    def __iter__(self: Any) -> Any:
        began = now_ns()  # worker start-up (every epoch, without persistent_workers) is the next step's wait
        return wrap_iterator(original_iter(self), self, began)

    __iter__._xfertop_wrapped = True  # type: ignore[attr-defined]
    __iter__.__wrapped__ = original_iter  # type: ignore[attr-defined]
    data_loader.__iter__ = __iter__


def watch_checkpoints(torch: Any) -> None:
    """``torch.save`` flags the step it runs in (a checkpoint's time is in that step's wall); the save
    itself is the original's, called with the same arguments, its result and exceptions unchanged."""
    import contextlib
    import functools

    from xfertop.reporter import note_checkpoint, note_checkpoint_saved

    original_save = torch.save
    if getattr(original_save, "_xfertop_wrapped", False):
        return

    @functools.wraps(original_save)
    def save(*args: Any, **kwargs: Any) -> Any:
        with contextlib.suppress(Exception):  # never the job's problem
            note_checkpoint()
        try:
            return original_save(*args, **kwargs)
        finally:
            with contextlib.suppress(Exception):
                note_checkpoint_saved()

    save._xfertop_wrapped = True  # type: ignore[attr-defined]
    torch.save = save


def install(copy_timing: bool = False) -> None:
    def on_torch(torch: ModuleType) -> None:
        patch_dataloader(torch)
        install_step_marks(torch, copy_timing)
        watch_checkpoints(torch)

    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "utils"):
        on_torch(torch)
    else:
        sys.meta_path.insert(0, AfterImport("torch", on_torch))
