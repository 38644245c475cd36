"""(j) Non-persistent DataLoader workers over many short epochs: a small data set (320 samples, 10 batches
an epoch) read from slow storage (1 ms of latency per sample) by 4 workers, persistent_workers=False
(the default). Between epoch starts the workers keep up; at every epoch start all four are started
again and the loop waits for their first batches.

    python benchmarks/scenarios/short_epochs.py [--seconds 20] [--truth]
"""

from __future__ import annotations

import time

import torch
from _common import Clock, parse_args, pick_device, seed_everything, train_step
from torch import nn
from torch.utils.data import DataLoader, Dataset


class SlowStore(Dataset):
    def __init__(self, count: int, features: int) -> None:
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(count, features, generator=g)
        self.y = torch.randint(0, 10, (count,), generator=g)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        time.sleep(0.001)  # storage latency
        return self.x[index], self.y[index]


def main() -> None:
    args = parse_args("Non-persistent workers restarted every (short) epoch.")
    device = pick_device(args.device)
    seed_everything()
    clock = Clock("j", args, device)
    gpu = device.type == "cuda"
    features, width = (1024, 8192) if gpu else (256, 1024)
    dataset = SlowStore(320, features)
    loader = DataLoader(dataset, batch_size=32, shuffle=True, num_workers=4, pin_memory=gpu)
    model = nn.Sequential(
        nn.Linear(features, width), nn.GELU(), nn.Linear(width, width), nn.GELU(), nn.Linear(width, 10)
    ).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    epochs = 0
    while not clock.done:
        epochs += 1
        for x, y in clock.timed(loader):
            x, loss = train_step(clock, model, optimizer, x, y, device)
            if clock.step_done(len(x), loss.detach() if clock.train_steps == 0 else None):
                break
    clock.finish(extra={"epochs": epochs})


if __name__ == "__main__":
    main()
