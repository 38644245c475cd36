"""The DataLoader child loop timed in one process before and after each of `xfertop run`'s hooks is installed.

    taskset -c 1 python hooks_in_one_process.py    # prints ns a step: direct, + the watch, + copy timing and step parts
"""
import json, sys, time
import torch
from torch.utils.data import DataLoader, TensorDataset
steps, device = 10000, torch.device("meta")
loader = DataLoader(TensorDataset(torch.ones(steps * 8, 64)), batch_size=8)
def best():
    passes = []
    for _ in range(5):
        began = time.perf_counter_ns()
        for (batch,) in loader:
            moved = batch.to(device, non_blocking=True)
            moved.add_(1.0)
        passes.append((time.perf_counter_ns() - began) / steps)
    return min(passes)
a = best()
from xfertop.launch import autopatch
autopatch.patch_dataloader(torch)
b = best()
from xfertop.reporter._step_parts import install_step_marks
install_step_marks(torch, True)
c = best()
print(f"direct {a:.0f} dl {b:.0f} (+{(b-a)/1000:.1f}) dl+marks1 {c:.0f} (+{(c-a)/1000:.1f})")
