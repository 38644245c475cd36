"""(p) An IterableDataset: a stream of text records (synthetic log lines made from a fixed seed) that each
worker reads its share of (split by ``get_worker_info()``), normalises with regular expressions and
turns into hashed unigram + bigram ids (fastText-style), in Python. Two workers cannot keep up with a
small EmbeddingBag classifier (sparse gradients, SGD).

    python benchmarks/scenarios/iterable_dataset.py [--seconds 20] [--truth]
"""

from __future__ import annotations

import itertools
import random
import re
import zlib

import torch
from _common import Clock, parse_args, pick_device, seed_everything
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

BUCKETS = 1 << 15
TOKENS = 256
WORDS = [
    "error",
    "warning",
    "info",
    "disk",
    "network",
    "timeout",
    "user",
    "login",
    "failed",
    "ok",
    "retry",
    "node",
    "gpu",
    "memory",
    "cpu",
    "request",
    "served",
    "latency",
    "ms",
    "queue",
    "full",
    "empty",
]
_NON_WORD = re.compile(r"[^a-z0-9 ]+")
_DIGITS = re.compile(r"\d+")


class LogStream(IterableDataset):
    def __init__(self, records: int) -> None:
        self.records = records

    def lines(self, start: int, step: int):  # type: ignore[no-untyped-def]
        for index in range(start, self.records, step):
            rng = random.Random(index)
            words = [
                rng.choice(WORDS) + (str(rng.randrange(1000)) if rng.random() < 0.2 else "")
                for _ in range(rng.randrange(120, 200))
            ]
            yield index, "[" + str(index) + "] " + " ".join(words).upper() + "; path=/var/log/x.log"

    def __iter__(self):  # type: ignore[no-untyped-def]
        info = get_worker_info()
        start, step = (info.id, info.num_workers) if info is not None else (0, 1)
        for index, line in self.lines(start, step):
            text = _DIGITS.sub("0", _NON_WORD.sub(" ", line.lower()))
            words = text.split()
            grams = words + [a + " " + b for a, b in itertools.pairwise(words)]
            ids = [zlib.crc32(g.encode()) % BUCKETS for g in grams][:TOKENS]
            ids += [0] * (TOKENS - len(ids))
            yield torch.tensor(ids), index % 7


def main() -> None:
    args = parse_args("An IterableDataset with Python tokenisation in two workers.")
    device = pick_device(args.device)
    seed_everything()
    clock = Clock("p", args, device)
    gpu = device.type == "cuda"
    loader = DataLoader(
        LogStream(10_000_000), batch_size=64, num_workers=2, pin_memory=gpu, persistent_workers=True
    )
    model = nn.ModuleDict(
        {
            "bag": nn.EmbeddingBag(BUCKETS, 64, mode="mean", sparse=True),
            "head": nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 7)),
        }
    ).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)  # handles the bag's sparse gradients
    for ids, y in clock.timed(loader):
        with clock.phase("copy"):
            ids, y = ids.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with clock.phase("compute"):
            loss = F.cross_entropy(model["head"](model["bag"](ids)), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        if clock.step_done(len(ids), loss.detach() if clock.train_steps == 0 else None):
            break
    clock.finish()


if __name__ == "__main__":
    main()
