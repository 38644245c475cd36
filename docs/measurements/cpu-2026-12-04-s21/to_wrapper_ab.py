"""Copy timing's ``Tensor.to`` wrapper before and after the device-type memo, side by side in one process.

The loop of benchmarks/reporter_overhead.py's DataLoader child (``.to(cpu)`` of each batch, then an
``add_``), with ``Tensor.to`` swapped between: torch's own, a bare pass-through wrapper, the wrapper of
OLD_MODULE (the file at the commit before, e.g. ``git show HEAD~1:src/xfertop/reporter/_timed_copies.py
> /tmp/old.py``) and this tree's. ROUNDS rounds, the variants in turn; the fastest of three passes each.

    PYTHONPATH=src python docs/measurements/cpu-2026-12-04-s21/to_wrapper_ab.py /tmp/old.py [ROUNDS]
"""

import importlib.util
import sys
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

from xfertop.reporter import _timed_copies

STEPS = 20000
loader = DataLoader(TensorDataset(torch.ones(STEPS * 8, 64)), batch_size=8)
device = torch.device("cpu")


def per_step_ns() -> float:
    passes = []
    for _ in range(3):
        began = time.perf_counter_ns()
        for (batch,) in loader:
            moved = batch.to(device, non_blocking=True)
            moved.add_(1.0)
        passes.append((time.perf_counter_ns() - began) / STEPS)
    return min(passes)


def wrapper_of(module) -> object:  # type: ignore[no-untyped-def]
    torch.Tensor.to = original
    module.install_copy_timing(torch)
    wrapped = torch.Tensor.to
    torch.Tensor.to = original
    return wrapped


original = torch.Tensor.to
spec = importlib.util.spec_from_file_location("old_timed_copies", sys.argv[1])
old = importlib.util.module_from_spec(spec)
spec.loader.exec_module(old)


def passthrough(self, *args, **kwargs):  # type: ignore[no-untyped-def]
    return original(self, *args, **kwargs)


variants = {"torch": original, "pass-through": passthrough, "old": wrapper_of(old), "new": wrapper_of(_timed_copies)}
results: dict[str, list[float]] = {name: [] for name in variants}
for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 3):
    for name, to in variants.items():
        torch.Tensor.to = to
        results[name].append(per_step_ns())
torch.Tensor.to = original
base = min(results["torch"])
for name, values in results.items():
    print(f"{name:13s} {min(values) / 1000:7.2f} us/step  {(min(values) - base) / 1000:+6.2f}  rounds {[round(v / 1000, 1) for v in values]}")
