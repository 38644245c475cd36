import time

import torch
from torch.utils.data import DataLoader, TensorDataset

from xfertop.reporter._timed_copies import install_copy_timing

steps = 20000
loader = DataLoader(TensorDataset(torch.ones(steps * 8, 64)), batch_size=8)
d = torch.device("cpu")
pn = time.perf_counter_ns


def run():
    t_next = t_to = t_add = 0
    it = iter(loader)
    for _ in range(steps):
        a = pn()
        (batch,) = next(it)
        b = pn()
        moved = batch.to(d, non_blocking=True)
        c = pn()
        moved.add_(1.0)
        e = pn()
        t_next += b - a
        t_to += c - b
        t_add += e - c
    return t_next / steps, t_to / steps, t_add / steps


def best():
    r = [run() for _ in range(3)]
    return [min(x[i] for x in r) / 1000 for i in range(3)]


n, t, a = best()
print(f"plain   next {n:.2f}  to {t:.2f}  add {a:.2f}")
install_copy_timing(torch)
n, t, a = best()
print(f"wrapped next {n:.2f}  to {t:.2f}  add {a:.2f}")
