"""Run's hooks on the CPU VM, split: the DataLoader wrapper's next() path and copy timing's ``.to()`` wrapper
put on one at a time, in turns in one process (reporter_overhead.py's child loop: a TensorDataset of
batch 8, ``.to(cpu)`` and an ``add_`` a step). Prints each variant's ns a step beyond torch's own.

    PYTHONPATH=src python docs/measurements/cpu-2026-12-07-s46/hook_ab.py [TURNS]
"""

import statistics
import sys
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

STEPS = 1000
device = torch.device("cpu")
loader = DataLoader(TensorDataset(torch.ones(STEPS * 8, 64)), batch_size=8)


def one() -> float:
    began = time.perf_counter_ns()
    for (batch,) in loader:
        moved = batch.to(device, non_blocking=True)
        moved.add_(1.0)
    return (time.perf_counter_ns() - began) / STEPS


one()
from xfertop.launch import autopatch  # noqa: E402

autopatch.install(copy_timing=True)
it_on, to_on = DataLoader.__iter__, torch.Tensor.to
it_off, to_off = it_on.__wrapped__, to_on.__wrapped__
variants = {"off": (it_off, to_off), "iter": (it_on, to_off), "to": (it_off, to_on), "both": (it_on, to_on)}
times: dict[str, list[float]] = {name: [] for name in variants}
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 15):
    for name, (iter_, to) in variants.items():
        DataLoader.__iter__, torch.Tensor.to = iter_, to
        times[name].append(one())
off = statistics.median(times["off"])
print({name: round(statistics.median(t) - off) for name, t in times.items()}, "off", round(off))
