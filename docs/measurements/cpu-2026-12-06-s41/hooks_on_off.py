"""Session 41 (CPU VM): reporter_overhead.py's DataLoader loop with `xfertop run`'s hooks on, off (DataLoader.__iter__
and Tensor.to restored from __wrapped__) and on again, in one process: is the one-process figure the
hooks' or drift? `python hooks_on_off.py STEPS DEVICE ORDER`, ORDER of A (the loop), B (autopatch.install:
all of run's hooks; after a U it wraps the two again), U (the two off again), e.g. ABUB or AAA (A/A)."""
import json, sys, time, torch
from torch.utils.data import DataLoader, TensorDataset
steps, device, order = int(sys.argv[1]), torch.device(sys.argv[2]), sys.argv[3]
loader = DataLoader(TensorDataset(torch.ones(steps * 8, 64)), batch_size=8)
def fastest():
    passes = []
    for _ in range(3):
        began = time.perf_counter_ns()
        for (batch,) in loader:
            moved = batch.to(device, non_blocking=True)
            moved.add_(1.0)
        passes.append((time.perf_counter_ns() - began) / steps)
    return min(passes)
out = []
for ch in order:
    if ch == "B":
        from xfertop.launch import autopatch
        autopatch.install(copy_timing=True)
    if ch == "U":  # hooks off again: the originals back
        import torch.utils.data as tud
        tud.DataLoader.__iter__ = tud.DataLoader.__iter__.__wrapped__
        torch.Tensor.to = torch.Tensor.to.__wrapped__
    out.append(round(fastest()))
print(order, out, [round((x - out[0]) / 1000, 1) for x in out])
