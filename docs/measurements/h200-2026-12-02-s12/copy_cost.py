"""Where copy timing's host time goes on a CUDA machine (issue 20: <= 10 us per step with it on).

Three parts, printed as they finish:
1. primitives: host ns per call of what the `.to()` wrapper and the step clock call per copy;
2. side by side in one process: the `reporter_overhead.py` child loop (a DataLoader over a pageable
   TensorDataset, batch 8x64, `.to(cuda, non_blocking=True)`, `add_`) direct, with the DataLoader
   watched (`xfertop run --no-copy-timing`), and with copy timing too (`xfertop run`), alternating
   rounds; the patches are swapped in and out between rounds, so the three share one process;
3. ``--spin VARIANT --seconds S``: one variant in a loop, for py-spy to sample.

    python copy_cost.py [--steps N] [--rounds R]
    py-spy record -r 997 --native -f raw -o prof.txt -- python copy_cost.py --spin copy --seconds 6
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

import torch
from torch.utils.data import DataLoader, TensorDataset

from xfertop import reporter
from xfertop.launch import autopatch


def per_call_ns(action: Callable[[], object], calls: int = 20_000) -> float:
    best = float("inf")
    for _ in range(3):
        action()
        began = time.perf_counter_ns()
        for _ in range(calls):
            action()
        best = min(best, (time.perf_counter_ns() - began) / calls)
    return best


def primitives(device: torch.device) -> None:
    pageable = torch.ones(8, 64)
    pinned = torch.ones(8, 64).pin_memory() if device.type == "cuda" else pageable
    moved = pageable.to(device)
    other = torch.device(device.type, 0) if device.type == "cuda" else torch.device("cpu")
    rows = {
        "to(non_blocking) pageable": lambda: pageable.to(device, non_blocking=True),
        "to(non_blocking) pinned": lambda: pinned.to(device, non_blocking=True),
        "src.is_cpu": lambda: pageable.is_cpu,
        "src.is_pinned() pageable": pageable.is_pinned,
        "src.is_pinned() pinned": pinned.is_pinned,
        "src.nbytes": lambda: pageable.nbytes,
        "moved.device": lambda: moved.device,
        "moved.device.type": lambda: moved.device.type,
        "moved.is_cuda": lambda: moved.is_cuda,
        "device != device": lambda: moved.device != other,
        "perf_counter_ns": time.perf_counter_ns,
        "isinstance(device)": lambda: isinstance(device, torch.device),
    }
    for name, action in rows.items():
        print(f"primitive {name:28} {per_call_ns(action):8.0f} ns/call", flush=True)
    if device.type == "cuda":
        torch.cuda.synchronize()


class Patches:
    """autopatch's patches installed once; their DataLoader and Tensor.to/.cuda swapped per variant."""

    def __init__(self) -> None:
        loader_iter, to, cuda = DataLoader.__iter__, torch.Tensor.to, torch.Tensor.cuda
        autopatch.install(copy_timing=True)
        self.original = (loader_iter, to, cuda)
        self.patched = (DataLoader.__iter__, torch.Tensor.to, torch.Tensor.cuda)
        assert self.patched[1] is not to, "copy timing did not install"

    def use(self, variant: str) -> None:
        """``direct``, ``watched``, ``copy``; ``-nogpu``: the clock's GPU side held off (no timer)."""
        loader_iter = self.original[0] if variant == "direct" else self.patched[0]
        to, cuda = self.patched[1:] if variant.startswith("copy") else self.original[1:]
        DataLoader.__iter__, torch.Tensor.to, torch.Tensor.cuda = loader_iter, to, cuda  # type: ignore[method-assign]
        clock = reporter._clock
        if clock is None:
            return
        gap = clock.gap
        if variant.endswith("-nogpu"):
            if gap.timer is not None:
                self.timer = gap.timer
            gap.timer, gap.after_prev = None, None
            gap.use_cuda_device = lambda index: None  # type: ignore[method-assign]
        else:
            gap.__dict__.pop("use_cuda_device", None)
            if gap.timer is None and getattr(self, "timer", None) is not None:
                gap.timer = self.timer


def loop(loader: DataLoader, device: torch.device) -> int:
    steps = 0
    for (batch,) in loader:
        moved = batch.to(device, non_blocking=True)
        moved.add_(1.0)
        steps += 1
    if device.type == "cuda":
        torch.cuda.synchronize()
    return steps


def side_by_side(device: torch.device, steps: int, rounds: int) -> None:
    patches = Patches()
    loader = DataLoader(TensorDataset(torch.ones(steps * 8, 64)), batch_size=8)
    variants = ("direct", "watched", "watched-nogpu", "copy", "copy-nogpu")
    per_step: dict[str, list[float]] = {name: [] for name in variants}
    for name in variants:  # warm-up: the clock starts, the device is learnt
        patches.use(name)
        loop(loader, device)
    for _ in range(rounds):
        for name in variants:
            patches.use(name)
            began = time.perf_counter_ns()
            done = loop(loader, device)
            per_step[name].append((time.perf_counter_ns() - began) / done)
    base = statistics.median(per_step["direct"])
    for name in variants:
        median = statistics.median(per_step[name])
        spread = (max(per_step[name]) - min(per_step[name])) / 1000
        print(
            f"in-process {name:13} {median / 1000:7.2f} us/step  +{(median - base) / 1000:6.2f} us"
            f"  (spread {spread:.2f} us over {rounds} rounds)",
            flush=True,
        )
    print("reporter status:", reporter.status(), flush=True)


def spin(device: torch.device, variant: str, seconds: float) -> None:
    patches = Patches()
    patches.use(variant)
    loader = DataLoader(TensorDataset(torch.ones(2000 * 8, 64)), batch_size=8)
    end = time.monotonic() + seconds
    steps = 0
    while time.monotonic() < end:
        steps += loop(loader, device)
    print(f"spin {variant}: {steps} steps in {seconds} s", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--spin", choices=("direct", "watched", "watched-nogpu", "copy", "copy-nogpu"))
    parser.add_argument("--seconds", type=float, default=6.0)
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "meta")
    if device.type == "cuda":
        torch.ones(1, device=device)
    if args.spin:
        spin(device, args.spin, args.seconds)
        return 0
    primitives(device)
    side_by_side(device, args.steps, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
