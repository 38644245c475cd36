"""(a) A slow ``__getitem__`` on the main process: every sample is a JSON record read from slow storage
(1 ms of latency, then parsed), and the DataLoader has num_workers=0, the default.

    python benchmarks/scenarios/slow_getitem.py [--seconds 20] [--truth]
"""

from __future__ import annotations

import json
import random
import time

import torch
from _common import Clock, parse_args, pick_device, seed_everything, train_step
from torch import nn
from torch.utils.data import DataLoader, Dataset

FEATURES = 256


class JsonRecords(Dataset):
    """Records kept as JSON text, as a key-value store or a JSONL shard would hold them."""

    def __init__(self, count: int, latency_s: float) -> None:
        rng = random.Random(0)
        self.records = [
            json.dumps(
                {"id": i, "x": [round(rng.gauss(0, 1), 4) for _ in range(FEATURES)], "y": rng.randrange(10)}
            )
            for i in range(count)
        ]
        self.latency_s = latency_s

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        time.sleep(self.latency_s)  # the storage round trip
        record = json.loads(self.records[index])
        return torch.tensor(record["x"], dtype=torch.float32), record["y"]


def main() -> None:
    args = parse_args("A training loop starved by a slow __getitem__ with num_workers=0.")
    device = pick_device(args.device)
    seed_everything()
    clock = Clock("a", args, device)
    dataset = JsonRecords(4096, latency_s=0.001)
    loader = DataLoader(dataset, batch_size=32, shuffle=True, num_workers=0)
    width = 2048 if device.type == "cuda" else 1024
    model = nn.Sequential(nn.Linear(FEATURES, width), nn.ReLU(), nn.Linear(width, 10)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    while not clock.done:
        for x, y in clock.timed(loader):
            x, loss = train_step(clock, model, optimizer, x, y, device)
            if clock.step_done(len(x), loss.detach() if clock.train_steps == 0 else None):
                break
    clock.finish()


if __name__ == "__main__":
    main()
