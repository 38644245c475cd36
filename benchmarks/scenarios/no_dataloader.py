"""(q) A loop with no DataLoader: the whole (small) data set is moved to the device once, and each step
indexes a shuffled slice of it. Compute-bound; nothing in the loop is a DataLoader.

    python benchmarks/scenarios/no_dataloader.py [--seconds 20] [--truth]
"""

from __future__ import annotations

import torch
from _common import Clock, parse_args, pick_device, seed_everything
from torch import nn
from torch.nn import functional as F


def main() -> None:
    args = parse_args("A training loop without a DataLoader (data on the device, sliced per step).")
    device = pick_device(args.device)
    seed_everything()
    clock = Clock("q", args, device)
    gpu = device.type == "cuda"
    features, width, batch = (1024, 8192, 1024) if gpu else (256, 1024, 128)
    g = torch.Generator().manual_seed(0)
    x_all = torch.randn(65536, features, generator=g).to(device)
    y_all = torch.randint(0, 10, (65536,), generator=g).to(device)
    model = nn.Sequential(
        nn.Linear(features, width), nn.GELU(), nn.Linear(width, width), nn.GELU(), nn.Linear(width, 10)
    ).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    while not clock.done:
        order = torch.randperm(len(x_all), device=device)
        for start in range(0, len(order) - batch + 1, batch):
            clock.manual_step()
            with clock.phase("loop_pre"):  # no loader to wait for: the loop makes its own batch
                index = order[start : start + batch]
                x, y = x_all[index], y_all[index]
            with clock.phase("compute"):
                loss = F.cross_entropy(model(x), y)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
            if clock.step_done(len(x), loss.detach() if clock.train_steps == 0 else None):
                break
    clock.finish()


if __name__ == "__main__":
    main()
