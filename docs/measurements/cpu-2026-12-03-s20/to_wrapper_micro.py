import timeit

import torch

from xfertop.reporter._timed_copies import install_copy_timing

b = torch.ones(8, 64)
d = torch.device("cpu")


def t(stmt, n=200000):
    return min(timeit.repeat(stmt, globals=globals(), number=n, repeat=5)) / n * 1e9


raw = t("b.to(d, non_blocking=True)")
orig = torch.Tensor.to
install_copy_timing(torch)
wr = t("b.to(d, non_blocking=True)")
print(f"raw {raw:.0f} ns, wrapped {wr:.0f} ns, +{wr - raw:.0f} ns")
print("is_cpu", t("b.is_cpu"), "device", t("b.device"), "perf", t("time.perf_counter_ns()"))
