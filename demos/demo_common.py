"""What the demo scripts share: arguments, a small model, a dataset that takes time to load."""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn
from torch.utils.data import Dataset

import xfertop.reporter


def parse_args(description: str, steps: int = 30, load_ms: float = 2.0) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--steps", type=int, default=steps, help=f"training steps (default {steps})")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--features", type=int, default=256)
    parser.add_argument(
        "--load-ms", type=float, default=load_ms, help=f"time to load one sample, in ms (default {load_ms})"
    )
    parser.add_argument("--device", default="auto", help="cpu, cuda or auto (default auto)")
    return parser.parse_args()


def pick_device(requested: str) -> torch.device:
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(requested)


class SlowSamples(Dataset):
    """Samples that take ``load_ms`` each: storage latency (a sleep) plus a little real work."""

    def __init__(self, count: int, features: int, load_ms: float) -> None:
        self.count = count
        self.features = features
        self.load_ms = load_ms

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        started = time.perf_counter()
        sample = torch.rand(self.features, generator=torch.Generator().manual_seed(index))
        left_s = self.load_ms / 1000 - (time.perf_counter() - started)
        if left_s > 0:
            time.sleep(left_s)
        return sample, torch.tensor(index % 10)


def model_for(features: int, device: torch.device) -> tuple[nn.Module, torch.optim.Optimizer]:
    model = nn.Sequential(nn.Linear(features, 1024), nn.ReLU(), nn.Linear(1024, 10)).to(device)
    return model, torch.optim.SGD(model.parameters(), lr=0.01)


def train_step(
    model: nn.Module, optimizer: torch.optim.Optimizer, inputs: torch.Tensor, labels: torch.Tensor
) -> None:
    optimizer.zero_grad(set_to_none=True)
    loss = nn.functional.cross_entropy(model(inputs), labels)
    loss.backward()
    optimizer.step()


def report(name: str) -> None:
    status = xfertop.reporter.status()
    print(
        f"{name}: {status['steps']} steps written to {status['ring_path']} "
        f"(reporter errors: {status['errors']}). Watch a live run with `xfertop` in another pane."
    )
