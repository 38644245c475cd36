"""Session 41 (CPU VM): the DataLoader watch put on two ways, alternating in one process: A plain, W
`xfertop.watch(loader, instrument=False)`, P run's DataLoader.__iter__ hook (patched for its pass only).
`python watch_two_ways.py STEPS DEVICE ORDER`, e.g. AWPAWP; prints each pass's us a step beyond the first A."""
import sys, time, torch
from torch.utils.data import DataLoader, TensorDataset
import xfertop
from xfertop.launch import autopatch
steps, device, order = int(sys.argv[1]), torch.device(sys.argv[2]), sys.argv[3]
loader = DataLoader(TensorDataset(torch.ones(steps * 8, 64)), batch_size=8)
def fastest(wrap):
    passes = []
    for _ in range(3):
        began = time.perf_counter_ns()
        for (batch,) in wrap(loader):
            moved = batch.to(device, non_blocking=True)
            moved.add_(1.0)
        passes.append((time.perf_counter_ns() - began) / steps)
    return min(passes)
plain = lambda l: l
watched = lambda l: xfertop.watch(l, instrument=False)
out = []
import torch.utils.data as tud
orig = tud.DataLoader.__iter__
for ch in order:
    if ch == "A": out.append(fastest(plain))
    if ch == "W": out.append(fastest(watched))
    if ch == "P":
        autopatch.patch_dataloader(torch); out.append(fastest(plain)); tud.DataLoader.__iter__ = orig
print(order, [round((x - out[0]) / 1000, 1) for x in out])
