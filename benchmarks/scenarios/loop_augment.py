"""(r) Loop work before the copy: the DataLoader hands over raw uint8 images (an in-memory tensor, so no
workers: ``num_workers=0``), and the loop body turns each batch into the model's input on the CPU, as
many first versions of a training script do: to float, normalise, a random horizontal flip, a resize
with ``F.interpolate`` and Gaussian noise, and only then ``.to(device)``. The model is small: the loop's
own work before the copy is most of each step. On a GPU the device idles while the host augments; on a
CPU that work is most of the step too. The fix is to move the augmentation into the Dataset and give
the loader workers to run it, or to do it on the GPU after the copy (of the uint8 batch: a quarter of
the bytes).

On a GPU: 128 images of 3x160x160 resized to 128x128, a 3-stage CNN. On a CPU: 64 images of 3x96x96
(STL-10's size) resized to 64x64, a 2-stage CNN.

    python benchmarks/scenarios/loop_augment.py [--seconds 20] [--truth]
"""

from __future__ import annotations

import itertools

import torch
from _common import Clock, parse_args, pick_device, seed_everything
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

CLASSES = 10


def small_cnn(widths: tuple[int, ...]) -> nn.Module:
    """A patchify stem (4x4, stride 4), then stride-2 convolutions: a small, cheap image classifier."""
    layers: list[nn.Module] = [nn.Conv2d(3, widths[0], 4, stride=4), nn.BatchNorm2d(widths[0]), nn.ReLU()]
    for before, width in itertools.pairwise(widths):
        layers += [nn.Conv2d(before, width, 3, stride=2, padding=1), nn.BatchNorm2d(width), nn.ReLU()]
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(widths[-1], CLASSES))


def main() -> None:
    args = parse_args("Per-batch augmentation on the CPU in the loop body, before the copy.")
    device = pick_device(args.device)
    seed_everything()
    clock = Clock("r", args, device)
    gpu = device.type == "cuda"
    side, out_side, batch, widths = (160, 128, 128, (64, 128, 256)) if gpu else (96, 64, 64, (16, 32))
    g = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (2048, 3, side, side), dtype=torch.uint8, generator=g)
    labels = torch.randint(0, CLASSES, (2048,), generator=g)
    loader = DataLoader(
        TensorDataset(images, labels),
        batch_size=batch,
        shuffle=True,
        num_workers=0,  # the images are in memory already
        pin_memory=gpu,
        drop_last=True,
    )
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    augment = torch.Generator().manual_seed(1)
    model = small_cnn(widths).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    while not clock.done:
        for raw, y in clock.timed(loader):
            with clock.phase("loop_pre"):
                x = raw.float().div_(255)
                x = (x - mean) / std
                flip = torch.rand(len(x), generator=augment) < 0.5
                x[flip] = x[flip].flip(-1)
                x = F.interpolate(x, size=(out_side, out_side), mode="bilinear", align_corners=False)
                x = x + 0.1 * torch.randn(x.shape, generator=augment)
            with clock.phase("copy"):
                x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            with clock.phase("compute"):
                loss = F.cross_entropy(model(x), y)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
            if clock.step_done(len(x), loss.detach() if clock.train_steps == 0 else None):
                break
    clock.finish(tags={"side": f"{side}to{out_side}"})


if __name__ == "__main__":
    main()
