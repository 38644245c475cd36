"""(d, e) Large pageable batches copied with non_blocking=True (the DataLoader's pin_memory is left at its
default, False), so every copy is synchronous and, on a GPU, limited by pageable bandwidth.

The data are pre-batched shards held in memory (the Dataset returns whole batches, batch_size=None):
100 MB per batch on a GPU (128 x 3 x 256 x 256 float32), 1.5 MB on a CPU. ``--workers 0`` (d) hands the
in-memory tensors over directly; ``--workers 4`` (e) passes them through worker processes (shared memory,
still pageable).

    python benchmarks/scenarios/pageable_copy.py --workers 0 [--seconds 20] [--truth]
    python benchmarks/scenarios/pageable_copy.py --workers 4
    python benchmarks/scenarios/pageable_copy.py --workers 0 --pin loader   # the fix: pin_memory=True
    python benchmarks/scenarios/pageable_copy.py --workers 0 --pin source   # the shards pinned once
    python benchmarks/scenarios/pageable_copy.py --workers 0 --width 512    # compute several times a copy
"""

from __future__ import annotations

import torch
from _common import Clock, parse_args, pick_device, seed_everything, train_step
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Shards(Dataset):
    """``count`` pre-made batches of images and labels, returned whole."""

    def __init__(self, count: int, batch: int, side: int, unique: int = 4, pin: bool = False) -> None:
        g = torch.Generator().manual_seed(0)
        self.images = [torch.randn(batch, 3, side, side, generator=g) for _ in range(unique)]
        if pin:
            self.images = [image.pin_memory() for image in self.images]
        self.labels = [torch.randint(0, 100, (batch,), generator=g) for _ in range(unique)]
        self.count = count

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.images[index % len(self.images)], self.labels[index % len(self.labels)]


def patch_model(width: int) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, width, 8, stride=8),
        nn.GELU(),
        nn.Conv2d(width, width, 3, padding=1),
        nn.GELU(),
        nn.Conv2d(width, width, 3, stride=2, padding=1),
        nn.GELU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(width, 100),
    )


def main() -> None:
    def extra(parser) -> None:
        parser.add_argument("--workers", type=int, default=0)
        # The same job with the usual fix: what pinning buys (benchmarks/probe_accuracy_gpu.py).
        parser.add_argument(
            "--pin",
            choices=("loader", "source"),
            default=None,
            help="the fixed job: pin_memory=True (loader), or the shards pinned once as made (source)",
        )
        # A wider model: compute several times the pinned copy (the probe's copies-free phase then
        # approaches what pinning buys; benchmarks/probe_accuracy_gpu.py).
        parser.add_argument("--width", type=int, default=None, help="the model's channels (256 on a GPU)")

    args = parse_args("Pageable batches copied with non_blocking=True.", extra)
    device = pick_device(args.device)
    seed_everything()
    scenario = "d" if args.workers == 0 else "e"
    clock = Clock(scenario, args, device)
    gpu = device.type == "cuda"
    batch, side = (128, 256) if gpu else (32, 64)
    loader = DataLoader(
        Shards(100_000, batch, side, pin=args.pin == "source" and gpu),
        batch_size=None,
        shuffle=True,
        num_workers=args.workers,
        persistent_workers=args.workers > 0,
        pin_memory=args.pin == "loader",
    )
    model = patch_model(args.width or (256 if gpu else 32)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    while not clock.done:
        for x, y in clock.timed(loader):
            x, loss = train_step(clock, model, optimizer, x, y, device)
            if clock.step_done(len(x), loss.detach() if clock.train_steps == 0 else None):
                break
    batch_mb = round(batch * 3 * side * side * 4 / 1e6)
    clock.finish(
        tags={
            "workers": str(args.workers),
            "batch_mb": str(batch_mb),
            "pinned": str(args.pin),
            "width": str(args.width),
        }
    )


if __name__ == "__main__":
    main()
