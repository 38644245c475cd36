"""A user's training job, written as users write them, to check that xfertop changes nothing a job does.

JPEG decode + torchvision augmentation (RandomResizedCrop, flip, ColorJitter) in 4 DataLoader workers
that are not persistent (the default: started again every epoch), a validation loader of 2 workers
after every epoch, a torchvision ResNet-18 built from its config (no weights), bf16 autocast and
channels_last on CUDA, SGD with momentum, several epochs; then it exits with ``--exit-code``. Without
PIL and torchvision (this repository's CPU VM) the corpus's stand-in pipeline and small CNN run instead,
as in benchmarks/scenarios/image_pipeline.py, whose datasets these are.

Everything it prints but its last line is deterministic: seeded samplers and worker RNGs, cuDNN's
deterministic kernels, deterministic algorithms where torch has them (``warn_only``), and the network's
global pooling as a mean (its adaptive-pooling backward has no deterministic CUDA kernel). Per epoch it
prints the mean training loss and the validation accuracy; at the end a checksum of the weights. The last
line, ``result ... samples_per_s=N``, is the training throughput, for benchmarks/plain_vs_run.py:

    python benchmarks/plain_vs_run.py --pairs 2 -- python benchmarks/epochs_job.py --exit-code 3

compares the samples/s plain and under `xfertop run`, and the exit codes and printed lines of every run.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

# Before CUDA starts: cuBLAS's deterministic mode needs a fixed workspace.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader

sys.path.insert(0, str(Path(__file__).resolve().parent / "scenarios"))
from image_pipeline import HAVE_VISION, JpegImages, ZlibImages, small_cnn

if HAVE_VISION:
    import torchvision


class GlobalMean(nn.Module):
    """AdaptiveAvgPool2d(1) as a mean: the same numbers, with a deterministic backward on CUDA."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=(2, 3), keepdim=True)


def build() -> tuple[nn.Module, JpegImages | ZlibImages, JpegImages | ZlibImages, int]:
    if HAVE_VISION:
        model = torchvision.models.resnet18(num_classes=100)
        model.avgpool = GlobalMean()
        return model, JpegImages(1280), JpegImages(256), 64
    return small_cnn(), ZlibImages(640), ZlibImages(128), 32


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--exit-code", type=int, default=0, help="the job's exit status at its end")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    torch.manual_seed(0)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.use_deterministic_algorithms(True, warn_only=True)

    model, train_set, val_set, batch = build()
    model = model.to(device).to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    train = DataLoader(
        train_set,
        batch_size=batch,
        shuffle=True,
        num_workers=args.workers,
        pin_memory=cuda,
        drop_last=True,
        generator=torch.Generator().manual_seed(1),
    )
    val = DataLoader(val_set, batch_size=batch, num_workers=2, pin_memory=cuda)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=cuda)
    samples, train_seconds = 0, 0.0
    for epoch in range(args.epochs):
        model.train()
        started = time.perf_counter()
        losses = []
        for x, y in train:
            x = x.to(device, non_blocking=True).to(memory_format=torch.channels_last)
            y = y.to(device, non_blocking=True)
            with autocast:
                loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            losses.append(loss.detach())
            samples += len(x)
        mean_loss = torch.stack(losses).float().mean().item()  # one sync an epoch
        train_seconds += time.perf_counter() - started
        model.eval()
        right = torch.zeros((), dtype=torch.long, device=device)
        with torch.no_grad(), autocast:
            for x, y in val:
                x = x.to(device, non_blocking=True).to(memory_format=torch.channels_last)
                right += (model(x).argmax(1) == y.to(device, non_blocking=True)).sum()
        print(
            f"epoch {epoch} train_loss={mean_loss:.6f} val_acc={right.item() / len(val_set):.4f}", flush=True
        )
    checksum = sum(p.detach().double().abs().sum().item() for p in model.parameters())
    print(f"weights_checksum={checksum:.9e}", flush=True)
    pipeline = "jpeg-torchvision" if HAVE_VISION else "zlib-standin"
    rate = samples / train_seconds if train_seconds > 0 else 0.0
    print(f"result job=epochs pipeline={pipeline} device={device.type} samples_per_s={rate:.2f}", flush=True)
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
