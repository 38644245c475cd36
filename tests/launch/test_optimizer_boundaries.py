"""A loop with no DataLoader under the real `xfertop run`: optimizer steps are its step boundaries; a loop
with a DataLoader keeps the loader's boundaries (one step per batch, not two)."""

from __future__ import annotations

from pathlib import Path

from ring_test_tools import run_under_xfertop

NO_LOADER = """
import time, torch
model = torch.nn.Linear(8, 8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
data = torch.randn(40 * 16, 8)
for start in range(0, len(data), 16):
    loss = model(data[start:start + 16]).square().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    spin = time.perf_counter()
    while time.perf_counter() - spin < 0.003:
        pass
print("done")
"""

WITH_LOADER = """
import torch
from torch.utils.data import DataLoader
model = torch.nn.Linear(8, 8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for batch in DataLoader(torch.randn(30 * 4, 8), batch_size=4):
    loss = model(batch).square().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("done")
"""


BREAKS_OUT = WITH_LOADER.replace(
    "    optimizer.step()\n",
    "    optimizer.step()\n    steps = locals().get('steps', 0) + 1\n    if steps == 23:\n        break\n",
)


def _run(tmp_path: Path, code: str) -> list:
    result, found = run_under_xfertop(tmp_path, code)
    assert result.stdout == "done\n", result.stderr
    return found


def test_a_loop_without_a_dataloader_is_stepped_by_its_optimizer(tmp_path: Path) -> None:
    (rank,) = _run(tmp_path, NO_LOADER)
    # 40 optimizer steps: the first opens a step, each next one closes the one before.
    assert len(rank.steps) == 39
    # No loader, so nothing is data wait: a boundary's next() is back-to-back (a descheduled moment on
    # a loaded machine may still land there, so the sum is checked, not each step).
    assert sum(s.data_wait_ms for s in rank.steps) < 0.05 * sum(s.wall_ms for s in rank.steps)
    assert all(s.wall_ms >= 3.0 for s in rank.steps)


def test_a_loop_with_a_dataloader_keeps_the_loaders_boundaries(tmp_path: Path) -> None:
    (rank,) = _run(tmp_path, WITH_LOADER)
    assert len(rank.steps) == 30


BLOCKS = """
import torch, xfertop
model = torch.nn.Linear(8, 8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
data = torch.randn(20 * 4, 8)
for i, start in enumerate(range(0, len(data), 4)):
    with xfertop.step():
        model(data[start:start + 4]).square().mean().backward()
    if i % 4 == 3:
        optimizer.step()   # gradient accumulation: outside the step() blocks
        optimizer.zero_grad()
print("done")
"""


def test_step_blocks_keep_their_boundaries_when_the_optimizer_steps_outside_them(tmp_path: Path) -> None:
    (rank,) = _run(tmp_path, BLOCKS)
    assert len(rank.steps) == 20


def test_the_step_a_break_leaves_open_is_counted(tmp_path: Path) -> None:
    """23 optimizer steps, then `break`: no next() closes the last step; it is written at exit, ending
    where its model did."""
    (rank,) = _run(tmp_path, BREAKS_OUT)
    assert len(rank.steps) == 23
    last = rank.steps[-1]
    assert last.partitioned and last.wall_ms < 1000, last
