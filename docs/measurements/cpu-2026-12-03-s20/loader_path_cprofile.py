# ruff: noqa: E402  (the ring directory is set before xfertop is imported)
import cProfile
import os
import pstats

os.environ.setdefault("XFERTOP_RING_DIR", "/tmp/xfertop-s20-rings")
os.makedirs(os.environ["XFERTOP_RING_DIR"], exist_ok=True)
import torch
from torch.utils.data import DataLoader, TensorDataset

from xfertop.launch import autopatch

steps = 20000
loader = DataLoader(TensorDataset(torch.ones(steps * 8, 64)), batch_size=8)
d = torch.device("cpu")
autopatch.patch_dataloader(torch)


def loop():
    for (batch,) in loader:
        moved = batch.to(d, non_blocking=True)
        moved.add_(1.0)


loop()
cProfile.run("loop()", "/tmp/xfertop-s20-p.out")
pstats.Stats("/tmp/xfertop-s20-p.out").sort_stats("tottime").print_stats(25)
