"""What one attribute read of the batch costs inside a DataLoader loop on this CPU VM: each op, once a step,
before the .to(cpu) and add_ of reporter_overhead.py's child; 3 rounds, the fastest of three passes.

    python docs/measurements/cpu-2026-12-04-s21/loop_op_costs.py
"""
import sys, time, torch
from torch.utils.data import DataLoader, TensorDataset
steps = 20000
loader = DataLoader(TensorDataset(torch.ones(steps * 8, 64)), batch_size=8)
d = torch.device("cpu")
ops = {
  "none": lambda b: None,
  "shape": lambda b: b[0].shape,
  "shape0": lambda b: int(b[0].shape[0]),
  "len": lambda b: len(b[0]),
  "size0": lambda b: b[0].size(0),
  "is_cuda": lambda b: b[0].is_cuda,
  "device": lambda b: b[0].device,
  "dev_type": lambda b: b[0].device.type,
}
def one(op):
    best = []
    for _ in range(3):
        began = time.perf_counter_ns()
        for batch in loader:
            op(batch)
            moved = batch[0].to(d, non_blocking=True)
            moved.add_(1.0)
        best.append((time.perf_counter_ns() - began) / steps)
    return min(best)
res = {k: [] for k in ops}
for r in range(3):
    for k, f in ops.items():
        res[k].append(one(f))
for k, v in res.items():
    print(f"{k:10s} {min(v)/1000:7.2f} ({(min(v)-min(res['none']))/1000:+.2f})")
