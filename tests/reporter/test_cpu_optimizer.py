"""Optimizers whose parameters are mostly in host memory, under the real `xfertop run`: the reporter says so
in the ring's state flags (their step is host arithmetic, not kernel launches; on a GPU job the verdict
then names it instead of "many small kernels"). Optimizers over device memory say nothing: this machine
has no GPU, so the meta device stands in for one (tensors with no host memory)."""

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


NO_LOADER = """
import torch

weight = torch.nn.Parameter(torch.zeros(8, 1))
optimizer = torch.optim.SGD([weight], lr=0.1)
data = torch.randn(256, 8)
for index in range(200):  # no DataLoader: the optimizer's steps are the step boundaries
    (data[index % 256] @ weight).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
print("done")
"""


def test_a_loop_without_a_dataloader_is_flagged_too(tmp_path: Path) -> None:
    # Its first optimizer step comes before the ring is open (the step boundary opens it).
    result, (rank,) = run_under_xfertop(tmp_path, NO_LOADER)
    assert result.stdout.splitlines()[-1] == "done"
    assert len(rank.steps) > 100
    assert rank.cpu_optimizer


SMALL_ONE_ON_THE_HOST = """
import torch
from torch.utils.data import DataLoader, TensorDataset

model = torch.nn.Parameter(torch.zeros(1024, 1024, device="meta"))  # the model's, on the "GPU"
log_alpha = torch.nn.Parameter(torch.zeros(1))  # a temperature of its own, as SAC keeps one, on the CPU
optimizers = torch.optim.SGD([model], lr=0.1), torch.optim.Adam([log_alpha], lr=0.1)
for (batch,) in DataLoader(TensorDataset(torch.randn(256, 8)), batch_size=4):
    model.grad, log_alpha.grad = torch.ones_like(model), torch.ones_like(log_alpha)
    for optimizer in optimizers:
        optimizer.step()
print("done")
"""


def test_a_small_optimizer_on_the_host_beside_the_models_is_not(tmp_path: Path) -> None:
    result, (rank,) = run_under_xfertop(tmp_path, SMALL_ONE_ON_THE_HOST)
    assert result.stdout.splitlines()[-1] == "done"
    assert not rank.cpu_optimizer
