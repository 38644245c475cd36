# ruff: noqa: E402  (the ring directory is set before xfertop is imported)
import os
import sys
import time

os.environ.setdefault("XFERTOP_RING_DIR", "/tmp/xfertop-s20-rings")
os.makedirs(os.environ["XFERTOP_RING_DIR"], exist_ok=True)
import torch
from torch.utils.data import DataLoader, TensorDataset

steps = 20000
loader = DataLoader(TensorDataset(torch.ones(steps * 8, 64)), batch_size=8)
d = torch.device("cpu")


def one():
    best = []
    for _ in range(3):
        began = time.perf_counter_ns()
        for (batch,) in loader:
            moved = batch.to(d, non_blocking=True)
            moved.add_(1.0)
        best.append((time.perf_counter_ns() - began) / steps)
    return min(best)


from xfertop.launch import autopatch
from xfertop.reporter import _timed_copies

order = sys.argv[1]
res = {"plain": one(), "plain again": one()}
for ch in order:
    if ch == "L":
        autopatch.patch_dataloader(torch)
        res["+loader"] = one()
    if ch == "C":
        _timed_copies.install_copy_timing(torch)
        res["+copy timing"] = one()
res["again"] = one()
prev = None
for k, v in res.items():
    print(f"{k:20s} {v / 1000:7.2f} us/step" + (f"  {(v - prev) / 1000:+.2f}" if prev else ""))
    prev = v
