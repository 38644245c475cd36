"""`xfertop run` (copy timing, on by default): time ``Tensor.to`` and ``Tensor.cuda`` calls made inside
a step.

It taxes every ``.to()`` in the process, not only the copies of the input batch: a Python wrapper per
call, +7 us on a ~35 us DataLoader step on the CPU VM (docs/reporter.md, benchmarks/reporter_overhead.py).
``--no-copy-timing`` leaves ``.to()`` alone.
"""

from __future__ import annotations

import time
from typing import Any

from xfertop import reporter
from xfertop.reporter import copy_timing_installed, note_tensor_copy, note_work_starting


def _targets_a_device(torch: Any, tensor: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether ``tensor.to(*args, **kwargs)`` may issue device work: a CPU tensor's dtype cast or
    ``.to("cpu")`` is the loop's own work and must not end its time before the model."""
    if not tensor.is_cpu:
        return True
    target = kwargs.get("device", args[0] if args else kwargs.get("other"))
    if target is None or isinstance(target, torch.dtype):
        return False
    if isinstance(target, torch.Tensor):
        return not target.is_cpu
    if isinstance(target, str):
        return not target.startswith("cpu")
    if isinstance(target, torch.device):
        return target.type != "cpu"
    return True  # an int is a CUDA device index


def install_copy_timing(torch: Any) -> None:
    tensor = torch.Tensor
    if getattr(tensor.to, "_xfertop_wrapped", False):
        return
    original_to = tensor.to
    original_cuda = tensor.cuda
    now_ns = time.perf_counter_ns

    def to(self: Any, *args: Any, **kwargs: Any) -> Any:
        if reporter._probe and (resident := reporter.probe_resident(self)) is not None:
            return resident  # `xfertop probe`, copies free: the copy made before
        if _targets_a_device(torch, self, args, kwargs):
            note_work_starting()
        began = now_ns()
        moved = original_to(self, *args, **kwargs)
        if moved is not self:
            note_tensor_copy(self, moved, bool(kwargs.get("non_blocking", False)), now_ns() - began)
            if reporter._probe:
                reporter.probe_moved(self, moved)
        return moved

    def cuda(self: Any, *args: Any, **kwargs: Any) -> Any:
        if reporter._probe and (resident := reporter.probe_resident(self)) is not None:
            return resident
        note_work_starting()
        began = now_ns()
        moved = original_cuda(self, *args, **kwargs)
        if moved is not self:
            note_tensor_copy(self, moved, bool(kwargs.get("non_blocking", False)), now_ns() - began)
            if reporter._probe:
                reporter.probe_moved(self, moved)
        return moved

    for wrapper, original in ((to, original_to), (cuda, original_cuda)):
        wrapper._xfertop_wrapped = True  # type: ignore[attr-defined]
        wrapper.__wrapped__ = original  # type: ignore[attr-defined]
        wrapper.__doc__ = original.__doc__
    tensor.to = to
    tensor.cuda = cuda
    copy_timing_installed()
