"""A loop with no DataLoader under the real `xfertop run`: optimizer steps are its step boundaries; a loop
with a DataLoader keeps the loader's boundaries (one step per batch, not two), until it trains on past the
loader's end without asking it again (itertools.cycle)."""

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


CYCLES = """
import itertools, time, torch
from torch.utils.data import DataLoader
model = torch.nn.Linear(8, 8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(torch.randn(5 * 4, 8), batch_size=4)
for step, batch in zip(range(25), itertools.cycle(loader)):  # the first epoch's 5 batches, replayed
    loss = model(batch).square().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    spin = time.perf_counter()
    while time.perf_counter() - spin < 0.003:
        pass
print("done")
"""


def test_a_loop_that_replays_its_loaders_batches_is_stepped_by_its_optimizer_past_the_loaders_end(
    tmp_path: Path,
) -> None:
    """itertools.cycle asks the loader for one epoch only: session 35's j89 showed those 5 steps (here)
    and none of the rest. Past the loader's end, optimizer steps mark the steps, from the third on (the
    first two may be an epoch's closing flush, or a prefetched last batch's): 5 loader steps, then one
    from each optimizer step to the next (the 8th to the 25th), each with the loader's batch size."""
    (rank,) = _run(tmp_path, CYCLES)
    assert len(rank.steps) == 5 + 17
    replayed = rank.steps[5:]
    assert all(s.samples == 4 and s.wall_ms >= 3.0 and s.data_wait_ms < 1.0 for s in replayed), replayed


FLUSHES = """
import torch
from torch.utils.data import DataLoader
model = torch.nn.Linear(8, 8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(torch.randn(6 * 4, 8), batch_size=4)
for epoch in range(3):
    for index, batch in enumerate(loader):
        model(batch).square().mean().backward()
        if index % 4 == 3:
            optimizer.step()
            optimizer.zero_grad()
    optimizer.step()  # the epoch's last two batches' gradients, after its loader ran out
    optimizer.step()  # (a second optimizer's, as a GAN's)
    optimizer.zero_grad()
print("done")
"""


def test_an_epochs_closing_optimizer_step_is_no_step_of_its_own(tmp_path: Path) -> None:
    (rank,) = _run(tmp_path, FLUSHES)
    assert len(rank.steps) == 3 * 6
