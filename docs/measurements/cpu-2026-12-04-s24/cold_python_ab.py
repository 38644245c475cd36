"""The same Python between steps, in a tight loop and between a real DataLoader's steps, side by side.

Twelve method calls on one object and a clock read a step (about the step clock's footprint), added to a
loop whose batches come from ``itertools.repeat`` and to one whose batches come from a DataLoader
(num_workers=0, TensorDataset, batch 8); each batch goes ``.to("meta")``. Also ``xfertop.watch`` around
each. Interleaved rounds in one process; prints the median added us a step of each.

    python docs/measurements/cpu-2026-12-04-s24/cold_python_ab.py
"""

from __future__ import annotations

import itertools
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable

os.environ.setdefault("XFERTOP_DIR", tempfile.mkdtemp())

import torch
from torch.utils.data import DataLoader, TensorDataset

import xfertop

STEPS = 5000
DEVICE = torch.device("meta")


class Busy:
    def __init__(self) -> None:
        self.total = 0
        self.last = 0
        self.seen: dict[int, int] = {}

    def note(self, x: int) -> int:
        self.total += x
        self.seen[x & 7] = self.total
        return self.last

    def step(self) -> None:
        for i in range(12):
            self.note(i)
        self.last = time.perf_counter_ns()


def main() -> None:
    busy = Busy()
    loader = DataLoader(TensorDataset(torch.ones(STEPS * 8, 64)), batch_size=8)
    one = torch.ones(8, 64)

    def repeat() -> Iterable[tuple[torch.Tensor]]:
        return itertools.repeat((one,), STEPS)

    def loop(source: Callable[[], Iterable[tuple[torch.Tensor]]], extra: str) -> Callable[[], None]:
        def run() -> None:
            batches = source()
            if extra == "watch":
                batches = xfertop.watch(batches, instrument=False)
            for (host,) in batches:
                if extra == "busy":
                    busy.step()
                host.to(DEVICE, non_blocking=True)

        return run

    sources = {"repeat": repeat, "dataloader": lambda: loader}
    variants = {
        f"{name} {extra}": loop(source, extra)
        for name, source in sources.items()
        for extra in ("plain", "busy", "watch")
    }
    per_round: dict[str, list[float]] = {name: [] for name in variants}
    for run in variants.values():
        run()
    for _ in range(7):
        for name, run in variants.items():
            began = time.perf_counter_ns()
            run()
            per_round[name].append((time.perf_counter_ns() - began) / STEPS / 1000)
    for name in sources:
        base = per_round[f"{name} plain"]
        added = {
            extra: statistics.median(a - b for a, b in zip(per_round[f"{name} {extra}"], base, strict=True))
            for extra in ("busy", "watch")
        }
        print(
            f"{name:10} plain {statistics.median(base):6.1f} us/step; added: calls {added['busy']:5.2f} us,"
            f" xfertop.watch {added['watch']:5.2f} us"
        )


if __name__ == "__main__":
    main()
