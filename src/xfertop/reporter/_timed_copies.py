"""Copy timing (`xfertop run` by default, and `xfertop.watch`): time ``Tensor.to`` and ``Tensor.cuda``
calls made inside a step.

It taxes every ``.to()`` in the process, not only the copies of the input batch: a Python wrapper per
call, +4 us on a ~70 us DataLoader step on the CPU VM (docs/reporter.md "Session 21",
docs/measurements/cpu-2026-12-04-s21/to_wrapper_ab.py).
``--no-copy-timing`` (and ``xfertop.watch(loader, instrument=False)``) leaves ``.to()`` alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from xfertop import reporter
from xfertop.reporter import copy_timing_installed


def _device_target_check(torch: Any) -> Callable[[Any, tuple[Any, ...], dict[str, Any]], bool]:
    """``targets_a_device(tensor, args, kwargs)``: whether ``tensor.to(*args, **kwargs)`` may issue device
    work. A CPU tensor's dtype cast or ``.to("cpu")`` is the loop's own work and must not end its time
    before the model. torch's types are looked up once here, not at every ``.to()``."""
    device_type, dtype_type, tensor_type = torch.device, torch.dtype, torch.Tensor
    #: Whether each torch.device seen is the CPU: ``device.type`` builds a new string at every read, ~5 us
    #: inside a DataLoader loop on the CPU VM (docs/measurements/cpu-2026-12-04-s21). A job uses a few.
    on_cpu_by_device: dict[Any, bool] = {}

    def targets_a_device(tensor: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        if not tensor.is_cpu:
            return True
        target = kwargs["device"] if "device" in kwargs else (args[0] if args else kwargs.get("other"))
        if isinstance(target, device_type):  # the usual .to(device, non_blocking=True) first
            on_cpu = on_cpu_by_device.get(target)
            if on_cpu is None:
                on_cpu = target.type == "cpu"
                if len(on_cpu_by_device) < 64:
                    on_cpu_by_device[target] = on_cpu
            return not on_cpu
        if target is None or isinstance(target, dtype_type):
            return False
        if isinstance(target, tensor_type):
            return not target.is_cpu
        if isinstance(target, str):
            return not target.startswith("cpu")
        return True  # an int is a CUDA device index

    return targets_a_device


def _always(_tensor: Any, _args: tuple[Any, ...], _kwargs: dict[str, Any]) -> bool:
    return True  # .cuda() always targets a device


def _timed(
    original: Callable[..., Any], targets_a_device: Callable[[Any, tuple[Any, ...], dict[str, Any]], bool]
) -> Callable[..., Any]:
    """``original`` (Tensor.to or Tensor.cuda) timed, one frame a call: the step's first work said before a
    call that may target a device, the copy booked after it (StepWork.tensor_moved)."""
    now_ns = time.perf_counter_ns
    moving = reporter._moving  # set on a thread while to_device moves a batch (it books its own copies)

    def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
        if reporter._probe and (resident := reporter.probe_resident(self)) is not None:
            return resident  # `xfertop probe`, copies free: the copy made before
        clock = reporter._clock
        if clock is None or clock.disabled:
            moved = original(self, *args, **kwargs)
        else:
            work = clock.work
            # Only a step still waiting for its first work needs the target parsed (once a step).
            if work.awaits_first_work and targets_a_device(self, args, kwargs):
                work.starting()
            began = now_ns()
            moved = original(self, *args, **kwargs)
            if moved is not self and not moving.active:
                work.tensor_moved(self, moved, kwargs.get("non_blocking", False), now_ns() - began)
        if reporter._probe and moved is not self:
            reporter.probe_moved(self, moved)
        return moved

    timed.__name__ = timed.__qualname__ = original.__name__
    timed.__doc__ = original.__doc__
    timed._xfertop_wrapped = True  # type: ignore[attr-defined]
    timed.__wrapped__ = original  # type: ignore[attr-defined]
    return timed


def install_copy_timing(torch: Any) -> None:
    tensor = torch.Tensor
    if getattr(tensor.to, "_xfertop_wrapped", False):
        return
    tensor.to = _timed(tensor.to, _device_target_check(torch))
    tensor.cuda = _timed(tensor.cuda, _always)
    copy_timing_installed()
