"""(t) Launch-bound without a DataLoader: the data set is made in memory on the device once, each step takes
the next slice of it, and the model is a deep stack of tiny layers (120 x Linear(64, 64) + ReLU) at batch
32, with ``loss.item()`` added to a running average every step. On a GPU each step is ~1,000 small
kernels whose launch cost, not their work, sets the pace: the GPU is busy well under half the time while
the host dispatches them (launch-bound). The fix is fewer, bigger kernels: torch.compile or CUDA graphs, a
wider and shallower model, a bigger batch. On a CPU there is no launch to wait for: the same layers are
plain compute (compute-bound). No DataLoader, so nothing about workers applies.

    python benchmarks/scenarios/tiny_layers.py [--seconds 20] [--truth]
"""

from __future__ import annotations

import torch
from _common import Clock, parse_args, pick_device, seed_everything
from torch import nn
from torch.nn import functional as F

WIDTH, DEPTH, BATCH, CLASSES = 64, 120, 32, 10


def main() -> None:
    args = parse_args("Many tiny layers, data on the device, loss.item() every step: launch-bound on a GPU.")
    device = pick_device(args.device)
    seed_everything()
    clock = Clock("t", args, device)
    g = torch.Generator().manual_seed(0)
    x_all = torch.randn(8192, WIDTH, generator=g).to(device)
    y_all = torch.randint(0, CLASSES, (8192,), generator=g).to(device)
    layers: list[nn.Module] = []
    for _ in range(DEPTH):
        layers += [nn.Linear(WIDTH, WIDTH), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(WIDTH, CLASSES)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    running, steps = 0.0, 0
    while not clock.done:
        for start in range(0, len(x_all) - BATCH + 1, BATCH):
            clock.manual_step()
            with clock.phase("loop_pre"):  # no loader: the loop slices its batch out of memory
                x, y = x_all[start : start + BATCH], y_all[start : start + BATCH]
            with clock.phase("compute"):
                loss = F.cross_entropy(model(x), y)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
            with clock.phase("sync"):
                running += loss.item()
            steps += 1
            if clock.step_done(len(x), loss.detach() if clock.train_steps == 0 else None):
                break
    clock.finish(tags={"depth": str(DEPTH)}, extra={"mean_loss": round(running / max(1, steps), 4)})


if __name__ == "__main__":
    main()
