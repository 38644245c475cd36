"""(f) A tuned input pipeline: uint8 images from DataLoader workers, pin_memory=True, copies with
non_blocking=True, normalisation on the device. Nothing in the input pipeline should need tuning.

On a GPU: 128 x 3 x 224 x 224 uint8 batches (19 MB) and a ResNet-18 (torchvision's, built from its
config, when torchvision imports; else a small ResNet-style CNN defined here). On a CPU: 32 x 3 x 64 x 64
batches and the small CNN (width 16); pin_memory is then ignored by PyTorch (no accelerator).
Workers: 4 on a machine with at least 8 cores, else 1.

    python benchmarks/scenarios/pinned_copy.py [--seconds 20] [--truth]
"""

from __future__ import annotations

import torch
from _common import Clock, cpu_count, parse_args, pick_device, seed_everything
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset

try:
    import torchvision
except ImportError:
    torchvision = None


class Uint8Images(Dataset):
    def __init__(self, count: int, side: int, unique: int = 256) -> None:
        g = torch.Generator().manual_seed(0)
        self.images = torch.randint(0, 256, (unique, 3, side, side), dtype=torch.uint8, generator=g)
        self.labels = torch.randint(0, 100, (count,), generator=g)
        self.count = count

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        image = self.images[index % len(self.images)]
        if index % 2:  # a flip: the only augmentation left on the host
            image = image.flip(-1)
        return image, self.labels[index]


class Block(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(x + self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x))))))


def small_resnet(width: int = 32) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, width, 3, stride=2, padding=1),
        nn.BatchNorm2d(width),
        nn.ReLU(),
        Block(width),
        nn.Conv2d(width, 2 * width, 3, stride=2, padding=1),
        Block(2 * width),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(2 * width, 100),
    )


def main() -> None:
    args = parse_args("A pinned, non_blocking, uint8 input pipeline (nothing to tune).")
    device = pick_device(args.device)
    seed_everything()
    clock = Clock("f", args, device)
    gpu = device.type == "cuda"
    batch, side = (128, 224) if gpu else (32, 64)
    workers = 4 if cpu_count() >= 8 else 1
    loader = DataLoader(
        Uint8Images(100_000, side),
        batch_size=batch,
        shuffle=True,
        num_workers=workers,
        pin_memory=gpu,
        persistent_workers=True,
        drop_last=True,
    )
    if gpu and torchvision is not None:
        model: nn.Module = torchvision.models.resnet18(num_classes=100)
    else:
        model = small_resnet(16)
    model = model.to(device).to(memory_format=torch.channels_last)
    mean = torch.tensor([0.485, 0.456, 0.406], device=device).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=device).view(1, 3, 1, 1) * 255
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    while not clock.done:
        for x, y in clock.timed(loader):
            with clock.phase("copy"):
                x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            with clock.phase("compute"):
                x = ((x.float() - mean) / std).contiguous(memory_format=torch.channels_last)
                loss = F.cross_entropy(model(x), y)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
            if clock.step_done(len(x), loss.detach() if clock.train_steps == 0 else None):
                break
    clock.finish(tags={"workers": str(workers), "pinned": str(gpu).lower()})


if __name__ == "__main__":
    main()
