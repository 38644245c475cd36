"""(b) Too few DataLoader workers for a real image pipeline.

With PIL and torchvision importable (the GPU machine): JPEG images made in memory with PIL at start
(nothing is downloaded), decoded per sample, RandomResizedCrop(224) + flip + ColorJitter + ToTensor +
Normalize, a torchvision ResNet-18 built from its config (no weights), batch 64.
Without them (this CPU VM has neither): a CPU-heavy decode stand-in of the same shape: zlib-compressed
raw images (PNG's own codec, 384x384) inflated per sample, then crop + resize + flip + jitter + normalise with
torch ops, and a small CNN. The result line says which ran (pipeline=jpeg-torchvision or
pipeline=zlib-standin).

Workers: 2 on a machine with more than 2 cores, 1 on a 2-core machine: too few either way.

    python benchmarks/scenarios/image_pipeline.py [--seconds 20] [--truth] [--workers N] [--arch resnet50]
"""

from __future__ import annotations

import io
import random
import zlib

import torch
from _common import Clock, cpu_count, parse_args, pick_device, seed_everything
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset

try:
    import torchvision
    from PIL import Image
    from torchvision import transforms

    HAVE_VISION = True
except ImportError:  # the stand-in below runs instead
    HAVE_VISION = False

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def smooth_rgb_bytes(rng: random.Random, size: int, cells: int = 12) -> bytes:
    """A photo-like image: a coarse random grid, bilinearly upsampled, with fine noise on top."""
    coarse = torch.tensor([rng.random() for _ in range(3 * cells * cells)]).view(1, 3, cells, cells)
    image = F.interpolate(coarse, size=(size, size), mode="bilinear", align_corners=False)[0]
    noise = torch.rand(3, size, size, generator=torch.Generator().manual_seed(rng.randrange(1 << 30)))
    image = image + 0.08 * noise
    return (image.clamp(0, 1) * 255).to(torch.uint8).permute(1, 2, 0).contiguous().flatten().tolist()


class JpegImages(Dataset):
    """``count`` samples over ``unique`` distinct JPEGs (made once, in memory)."""

    def __init__(self, count: int, unique: int = 128, size: int = 320) -> None:
        rng = random.Random(0)
        self.count = count
        self.jpegs: list[bytes] = []
        for _ in range(unique):
            pixels = bytes(smooth_rgb_bytes(rng, size))
            out = io.BytesIO()
            Image.frombytes("RGB", (size, size), pixels).save(out, format="JPEG", quality=90)
            self.jpegs.append(out.getvalue())
        self.labels = [rng.randrange(100) for _ in range(count)]
        self.transform = transforms.Compose(
            [
                transforms.RandomResizedCrop(224),
                transforms.RandomHorizontalFlip(),
                transforms.ColorJitter(0.4, 0.4, 0.4),
                transforms.ToTensor(),
                transforms.Normalize(MEAN, STD),
            ]
        )

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        image = Image.open(io.BytesIO(self.jpegs[index % len(self.jpegs)])).convert("RGB")
        return self.transform(image), self.labels[index]


class ZlibImages(Dataset):
    """Stand-in: inflate a compressed uint8 image, then augment with torch ops (CPU work per sample)."""

    def __init__(self, count: int, unique: int = 128, size: int = 384, out: int = 96) -> None:
        rng = random.Random(0)
        self.count, self.size, self.out = count, size, out
        self.blobs = [zlib.compress(bytes(smooth_rgb_bytes(rng, size)), 6) for _ in range(unique)]
        self.labels = [rng.randrange(100) for _ in range(count)]
        self.mean = torch.tensor(MEAN).view(3, 1, 1)
        self.std = torch.tensor(STD).view(3, 1, 1)

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        raw = bytearray(zlib.decompress(self.blobs[index % len(self.blobs)]))
        image = torch.frombuffer(raw, dtype=torch.uint8).view(self.size, self.size, 3).permute(2, 0, 1)
        image = image.float() / 255
        crop = random.randint(self.size // 2, self.size)
        top, left = random.randint(0, self.size - crop), random.randint(0, self.size - crop)
        image = image[:, top : top + crop, left : left + crop]
        image = F.interpolate(
            image[None], size=(self.out, self.out), mode="bilinear", align_corners=False, antialias=True
        )[0]
        if random.random() < 0.5:
            image = image.flip(-1)
        brightness, contrast = 1 + random.uniform(-0.4, 0.4), 1 + random.uniform(-0.4, 0.4)
        image = ((image * brightness - image.mean()) * contrast + image.mean()).clamp(0, 1)
        return (image - self.mean) / self.std, self.labels[index]


def small_cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, stride=2, padding=1),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.Conv2d(32, 64, 3, stride=2, padding=1),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(64, 100),
    )


def main() -> None:
    def extra(parser) -> None:
        parser.add_argument("--workers", type=int, default=None)
        # A heavier model lets the same pipeline, fed, be compute-bound on a 16-core GPU machine
        # (benchmarks/probe_accuracy_gpu.py): ResNet-18 outruns what 12 decoding workers make.
        parser.add_argument("--arch", default="resnet18", help="a torchvision model name (GPU only)")

    args = parse_args("An image pipeline with too few DataLoader workers.", extra)
    device = pick_device(args.device)
    seed_everything()
    clock = Clock("b", args, device)
    workers = args.workers if args.workers is not None else (1 if cpu_count() <= 2 else 2)
    if HAVE_VISION:
        pipeline, dataset = "jpeg-torchvision", JpegImages(4096)
        model: nn.Module = getattr(torchvision.models, args.arch)(num_classes=100)
        batch_size = 64
    else:
        pipeline, dataset = "zlib-standin", ZlibImages(1024)
        model, batch_size = small_cnn(), 32
    print(
        f"pipeline: {pipeline} (PIL+torchvision {'found' if HAVE_VISION else 'not importable'}), "
        f"num_workers={workers}",
        flush=True,
    )
    loader = DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=True,
        num_workers=workers,
        pin_memory=device.type == "cuda",
        persistent_workers=True,
        drop_last=True,
    )
    model = model.to(device).to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    while not clock.done:
        for x, y in clock.timed(loader):
            with clock.phase("copy"):
                x = x.to(device, non_blocking=True).to(memory_format=torch.channels_last)
                y = y.to(device, non_blocking=True)
            with clock.phase("compute"):
                loss = F.cross_entropy(model(x), y)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
            if clock.step_done(len(x), loss.detach() if clock.train_steps == 0 else None):
                break
    clock.finish(tags={"pipeline": pipeline, "workers": str(workers), "arch": args.arch})


if __name__ == "__main__":
    main()
