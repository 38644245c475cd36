"""An optimizer that steps parameters held in host memory, under the real `xfertop run`: the reporter says
so once in the ring's state flags (its step is host arithmetic, not kernel launches; on a GPU job the
verdict then names it instead of "many small kernels"). An optimizer whose parameters are elsewhere says
nothing: this machine has no GPU, so the meta device stands in for one (tensors with no host memory)."""

from __future__ import annotations

from pathlib import Path

from ring_test_tools import run_under_xfertop

JOB = """
import torch
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("{device}")
weight = torch.nn.Parameter(torch.zeros(8, 1, device=device))
optimizer = torch.optim.SGD([weight], lr=0.1)
for (batch,) in DataLoader(TensorDataset(torch.randn(256, 8)), batch_size=4):
    weight.grad = torch.ones_like(weight)  # the gradient a backward on that device would leave
    optimizer.step()
print("done")
"""


def test_an_optimizer_over_host_memory_is_flagged_in_the_ring(tmp_path: Path) -> None:
    result, (rank,) = run_under_xfertop(tmp_path, JOB.format(device="cpu"))
    assert result.stdout.splitlines()[-1] == "done"
    assert len(rank.steps) > 20
    assert rank.cpu_optimizer


def test_an_optimizer_over_device_memory_is_not(tmp_path: Path) -> None:
    result, (rank,) = run_under_xfertop(tmp_path, JOB.format(device="meta"))
    assert result.stdout.splitlines()[-1] == "done"
    assert len(rank.steps) > 20
    assert not rank.cpu_optimizer
