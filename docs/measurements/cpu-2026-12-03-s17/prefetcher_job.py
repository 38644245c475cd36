"""A job not in the corpus: the loop reads its batches through a "data prefetcher" object (the pattern of
NVIDIA's Apex ImageNet example), which calls next(loader) and copies the next batch while the step before
runs, so the DataLoader's next() happens inside the prefetcher, in the middle of the loop's iteration.

--starved: 2 workers, each sample costs 3 ms of Python in __getitem__ (input-bound);
--fed: 2 workers, free samples, a bigger model (compute-bound on a CPU).
--truth times each phase on the host clock (benchmarks/scenarios/_common.py's Clock; on a CPU every
phase is synchronous, so the truth is exact).

    python prefetcher_job.py --starved|--fed [--seconds 20] [--truth]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks" / "scenarios"))

import torch  # noqa: E402
from _common import Clock, parse_args, pick_device, seed_everything  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402


class Slow(Dataset):
    def __init__(self, cost_s: float) -> None:
        self.cost_s = cost_s
        self.x = torch.randn(4096, 256)
        self.y = torch.randint(0, 10, (4096,))

    def __len__(self) -> int:
        return 4096

    def __getitem__(self, i: int):
        end = time.perf_counter() + self.cost_s
        while time.perf_counter() < end:
            pass
        return self.x[i], self.y[i]


class Prefetcher:
    def __init__(self, loader, device, clock: Clock) -> None:
        self.it, self.device, self.clock = iter(loader), device, clock
        self.preload()

    def preload(self) -> None:
        began = time.perf_counter()
        try:
            x, y = next(self.it)
        except StopIteration:
            self.batch = None
            return
        if self.clock.truth:
            self.clock.add("data", time.perf_counter() - began)
        with self.clock.phase("copy"):
            self.batch = (x.to(self.device, non_blocking=True), y.to(self.device, non_blocking=True))

    def next(self):
        batch = self.batch
        self.clock.manual_step()
        if batch is not None:
            self.preload()
        return batch


def main() -> None:
    def extra(parser) -> None:
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument("--starved", action="store_true")
        group.add_argument("--fed", action="store_true")

    args = parse_args("A loop fed through a data prefetcher object.", extra)
    device = pick_device(args.device)
    seed_everything()
    clock = Clock("prefetcher-" + ("starved" if args.starved else "fed"), args, device)
    width = 256 if args.starved else 2048
    loader = DataLoader(
        Slow(0.003 if args.starved else 0.0),
        batch_size=32,
        shuffle=True,
        num_workers=2,
        persistent_workers=False,
        drop_last=True,
    )
    layers = (nn.Linear(256, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10))
    model = nn.Sequential(*layers).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    while not clock.done:
        prefetcher = Prefetcher(loader, device, clock)
        batch = prefetcher.next()
        while batch is not None and not clock.done:
            x, y = batch
            with clock.phase("compute"):
                loss = F.cross_entropy(model(x), y)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
            with clock.phase("sync"):
                value = loss.item()
            clock.step_done(x.shape[0], value)
            batch = prefetcher.next()
    clock.finish()


if __name__ == "__main__":
    main()
