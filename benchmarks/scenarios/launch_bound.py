"""(i) Launch-bound: a deep stack of tiny residual blocks (LayerNorm, Linear 64x64, GELU) on a batch of 16,
so each step is some 1,500 small kernels whose launch cost, not their work, sets the pace. The fix is
fewer, bigger kernels (torch.compile / CUDA graphs, a wider and shallower model, a bigger batch), not the
input pipeline.

    python benchmarks/scenarios/launch_bound.py [--seconds 20] [--truth]
"""

from __future__ import annotations

import torch
from _common import Clock, parse_args, pick_device, seed_everything, train_step
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset


class TinyBlock(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + F.gelu(self.fc(self.norm(x)))


def main() -> None:
    args = parse_args("A launch-bound model: many tiny kernels per step.")
    device = pick_device(args.device)
    seed_everything()
    clock = Clock("i", args, device)
    width, depth, batch = 64, 96, 16
    g = torch.Generator().manual_seed(0)
    data = TensorDataset(torch.randn(8192, width, generator=g), torch.randint(0, 10, (8192,), generator=g))
    # The whole data set is a small in-memory tensor: loaded on the main process (num_workers=0).
    loader = DataLoader(data, batch_size=batch, shuffle=True, num_workers=0, drop_last=True)
    model = nn.Sequential(*[TinyBlock(width) for _ in range(depth)], nn.Linear(width, 10)).to(device)
    # foreach=False: one small kernel per parameter and op, as many older or custom optimizers do
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=False)
    while not clock.done:
        for x, y in clock.timed(loader):
            x, loss = train_step(clock, model, optimizer, x, y, device)
            if clock.step_done(len(x), loss.detach() if clock.train_steps == 0 else None):
                break
    clock.finish(tags={"depth": str(depth)})


if __name__ == "__main__":
    main()
