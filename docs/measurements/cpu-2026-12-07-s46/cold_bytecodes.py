"""What a bytecode costs between a DataLoader's steps: a wrapper iterator whose ``__next__`` calls nothing,
then one that runs 318 bytecodes of attribute work (no xfertop), in turns with the plain loop in one
process. The same 318 bytecodes in a hot ``timeit`` loop take ~2.7 us on this VM.

    python docs/measurements/cpu-2026-12-07-s46/cold_bytecodes.py
"""

import statistics
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

STEPS = 1000
device = torch.device("cpu")
loader = DataLoader(TensorDataset(torch.ones(STEPS * 8, 64)), batch_size=8)


class Marks:
    pass


marks = Marks()
for i in range(10):
    setattr(marks, f"a{i}", 0)


def nothing() -> None:
    pass


def attribute_work() -> None:  # 318 bytecodes (sys.settrace's opcode events)
    for _ in range(5):
        marks.a0 = 5
        marks.a1 = marks.a0 + 1
        marks.a2 = marks.a1 + 2
        marks.a3 = marks.a2 * 2
        marks.a4 = marks.a3 - marks.a1
        marks.a5 = marks.a4 | 1
        marks.a6 = marks.a5 & 7
        marks.a7 = marks.a0 - marks.a6
        marks.a8 = max(0, marks.a7)
        marks.a9 = marks.a8


class Wrapped:
    def __init__(self, iterator, hook):  # type: ignore[no-untyped-def]
        self.iterator, self.hook = iterator, hook

    def __iter__(self):  # type: ignore[no-untyped-def]
        return self

    def __next__(self):  # type: ignore[no-untyped-def]
        self.hook()
        return next(self.iterator)


def one(hook) -> float:  # type: ignore[no-untyped-def]
    began = time.perf_counter_ns()
    for (batch,) in Wrapped(iter(loader), hook) if hook else loader:
        moved = batch.to(device, non_blocking=True)
        moved.add_(1.0)
    return (time.perf_counter_ns() - began) / STEPS


hooks = {"plain": None, "nothing": nothing, "attribute_work": attribute_work}
times: dict[str, list[float]] = {name: [] for name in hooks}
for _ in range(10):
    for name, hook in hooks.items():
        times[name].append(one(hook))
plain = statistics.median(times["plain"])
print({name: round(statistics.median(t) - plain) for name, t in times.items()}, "plain", round(plain))
