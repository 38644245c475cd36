"""A validation pass every N training steps, inside the training loop, under the real `xfertop run`: the
validation loader's batches are no steps of their own; the pass belongs to the training step it follows
(its waits for its loader are that step's data wait, the rest the loop's work after the model). Session
29's j63 (validation every 40 steps over a loader whose 2 workers start at each pass) read "input-bound
... more workers cannot help" over 2,310 steps where it trained 1,642: each validation batch a step of
its own, and a 50-step window held under one pass, too few worker starts for "persistent_workers"."""

from __future__ import annotations

import statistics
from pathlib import Path

from ring_test_tools import run_under_xfertop
from xfertop.analysis.verdict import job_verdict

VALIDATE_EVERY_N = """
import torch
from torch.utils.data import DataLoader, TensorDataset

train = DataLoader(TensorDataset(torch.randn(6400, 32)), batch_size=64)
val = DataLoader(TensorDataset(torch.randn(256, 32)), batch_size=64, num_workers=2)  # workers start each pass
model = torch.nn.Linear(32, 1)
optimizer = torch.optim.SGD(model.parameters(), 0.1)
for step, (batch,) in enumerate(train, start=1):
    model(batch).pow(2).mean().backward()
    optimizer.step()
    optimizer.zero_grad()
    if step % 20 == 0:
        with torch.no_grad():
            total = sum(model(v).sum().item() for (v,) in val)
print("trained", step)
"""


def test_a_validation_pass_inside_the_loop_is_part_of_the_step_it_follows(tmp_path: Path) -> None:
    result, (rank,) = run_under_xfertop(tmp_path, VALIDATE_EVERY_N)
    assert result.stdout == "trained 100\n", result.stderr
    steps = rank.steps
    # 100 training steps; the last one closes at the loader's end. None of the 5 x 4 validation batches.
    assert len(steps) == 100, len(steps)
    validating = [s for s in steps if s.step % 20 == 19]  # ring steps count from 0
    training = [s for s in steps if s.step % 20 != 19 and s.step > 0]
    assert all(s.workers_started and s.epoch_start for s in validating)
    assert not any(s.workers_started for s in training)
    assert all(s.nested_pass for s in validating) and not any(s.nested_pass for s in training)
    # The pass waits for its loader, whose 2 workers start each time: the step's data wait, with that
    # loader's workers; its model calls and .item() are the loop's own work after the model.
    median_wall = statistics.median(s.wall_ms for s in training)
    assert min(s.data_wait_ms for s in validating) > 20 * median_wall
    assert all(s.loader_workers == 2 for s in validating) and training[0].loader_workers == 0
    assert all(s.sync_ms == 0 for s in validating)
    verdict = job_verdict([rank])
    assert verdict.kind == "input-bound", verdict.headline
    assert any("persistent_workers=True" in line for line in verdict.advice), verdict.advice


# A loop that leaves one loader with a `break` and trains on another (progressive resizing, a second
# phase): the second loader's first next() comes inside the first's last step, after its model, as a
# validation pass's would. Its batches are trained on, and they are the job's steps.
SWITCH_LOADERS = """
import torch
from torch.utils.data import DataLoader, TensorDataset

model = torch.nn.Linear(32, 1)
optimizer = torch.optim.SGD(model.parameters(), 0.1) if TRAIN else None
for phase, size in enumerate((16, 64)):
    loader = DataLoader(TensorDataset(torch.randn(64 * 100, 32)), batch_size=size)
    for step, (batch,) in enumerate(loader, start=1):
        loss = model(batch).pow(2).mean()
        if TRAIN:
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        if step == 30 * (phase + 1):
            break
print("done")
"""


def test_a_loop_that_moves_on_to_another_loader_still_steps_on_it(tmp_path: Path) -> None:
    result, (rank,) = run_under_xfertop(tmp_path, "TRAIN = True\n" + SWITCH_LOADERS)
    assert result.stdout == "done\n", result.stderr
    # 30 + 60 steps; the second loader's first batch joins the first loader's last step (an optimizer
    # step during the pass ends it), so 89 or 90.
    assert len(rank.steps) >= 89, len(rank.steps)
    assert sum(s.samples == 64 for s in rank.steps) >= 59
    assert not any(s.nested_pass for s in rank.steps)  # the other loader trained: no validation pass


def test_without_an_optimizer_the_pass_ends_after_the_longest_iteration(tmp_path: Path) -> None:
    # Inference over two loaders, no optimizer to say the second one is not a validation pass: its first
    # 30 batches (as many as the first loader's iteration) are taken for one, then its other 30 are steps.
    result, (rank,) = run_under_xfertop(tmp_path, "TRAIN = False\n" + SWITCH_LOADERS)
    assert result.stdout == "done\n", result.stderr
    assert len(rank.steps) >= 59, len(rank.steps)
    assert sum(s.samples == 64 for s in rank.steps) >= 29


# One validation batch after each training step, from a persistent iterator over the validation loader:
# its next() calls after the model are no boundaries (session 30's j70 counted 4,381 steps where it
# trained 2,194: each validation batch a step of its own, and its forward the model's compute).
VALIDATE_A_BATCH_EACH_STEP = """
import torch
from torch.utils.data import DataLoader, TensorDataset

train = DataLoader(TensorDataset(torch.randn(64 * 60, 256)), batch_size=64)
val = DataLoader(TensorDataset(torch.randn(256 * 4, 256)), batch_size=256)
# A step of a real model's size: a tiny one's steps are shorter than zip's window (ZippedFetches).
model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1))
optimizer = torch.optim.SGD(model.parameters(), 0.1)
val_it = iter(val)
for step, (batch,) in enumerate(train, start=1):
    model(batch).pow(2).mean().backward()
    optimizer.step()
    optimizer.zero_grad()
    try:
        (v,) = next(val_it)
    except StopIteration:
        val_it = iter(val)
        (v,) = next(val_it)
    with torch.no_grad():
        model(v).sum().item()
print("trained", step)
"""


def test_a_validation_batch_after_each_step_is_part_of_that_step(tmp_path: Path) -> None:
    result, (rank,) = run_under_xfertop(tmp_path, VALIDATE_A_BATCH_EACH_STEP)
    assert result.stdout == "trained 60\n", result.stderr
    assert len(rank.steps) == 60, len(rank.steps)
    # No step of the validation loader's 256, through its iterator's end and restart every 4 steps.
    assert all(s.samples == 64 for s in rank.steps)
    assert sum(s.nested_pass for s in rank.steps) >= 58


# Two loaders trained in turn (multi-task): B's next() comes after A's model as a validation batch's
# would, but an optimizer steps on its batch: from then on B's batches are steps of their own.
TRAIN_TWO_LOADERS_IN_TURN = """
import torch
from torch.utils.data import DataLoader, TensorDataset

a = iter(DataLoader(TensorDataset(torch.randn(64 * 30, 256)), batch_size=64))
b = iter(DataLoader(TensorDataset(torch.randn(16 * 30, 256)), batch_size=16))
# A step of a real model's size: a tiny one's steps are shorter than zip's window (ZippedFetches).
model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1))
optimizer = torch.optim.SGD(model.parameters(), 0.1)
for step in range(30):
    for it in (a, b):
        (batch,) = next(it)
        model(batch).pow(2).mean().backward()
        optimizer.step()
        optimizer.zero_grad()
print("done")
"""


def test_two_loaders_trained_in_turn_each_make_steps(tmp_path: Path) -> None:
    result, (rank,) = run_under_xfertop(tmp_path, TRAIN_TWO_LOADERS_IN_TURN)
    assert result.stdout == "done\n", result.stderr
    # 60 optimizer steps on 60 batches; B's first batch joins A's first step (its optimizer step shows
    # it trains), and one early fetch may join as zipped (B's 16-sample step can take under
    # JOINED_FETCH_NS of CPU time): at least 58 steps, 28 of them B's.
    assert len(rank.steps) >= 58, len(rank.steps)
    assert sum(s.samples == 16 for s in rank.steps) >= 28
    assert sum(s.nested_pass for s in rank.steps) == 0


# Validation at the top of the loop's body, before the step's model (the first step validates the
# initial model): session 31's j76 read 4,041 steps where it trained 2,967, and 3.4x its samples/s, each
# validation batch a step of its own and its forward the model's compute.
VALIDATE_BEFORE_THE_MODEL = """
import time
import torch
from torch.utils.data import DataLoader, TensorDataset

train = DataLoader(TensorDataset(torch.randn(64 * 60, 256)), batch_size=64)
val = DataLoader(TensorDataset(torch.randn(256 * 4, 256)), batch_size=256, num_workers=2)
model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1))
optimizer = torch.optim.SGD(model.parameters(), 0.1)
for step, (batch,) in enumerate(train):
    if step % 20 == 10:
        with torch.no_grad():
            for (v,) in val:
                model(v).sum().item()
                begun = time.perf_counter()
                while time.perf_counter() - begun < 0.01:  # 10 ms of the pass's own work a batch
                    pass
    model(batch).pow(2).mean().backward()
    optimizer.step()
    optimizer.zero_grad()
print("trained", step + 1)
"""


def test_a_validation_pass_before_the_model_is_part_of_its_step(tmp_path: Path) -> None:
    result, (rank,) = run_under_xfertop(tmp_path, VALIDATE_BEFORE_THE_MODEL)
    assert result.stdout == "trained 60\n", result.stderr
    steps = rank.steps
    assert len(steps) == 60, len(steps)
    assert all(s.samples == 64 for s in steps)  # no step of the validation loader's 256
    validating = [s for s in steps if s.step % 20 == 10]
    training = [s for s in steps if s.step % 20 != 10 and s.step > 0]
    assert all(s.nested_pass for s in validating) and not any(s.nested_pass for s in training)
    # The pass's 4 x 10 ms of work is the loop's own before the model; its waits (2 workers starting)
    # are data wait; the model's marks start after it: the model part is a training step's.
    assert all(s.loop_pre_ms >= 40.0 for s in validating), [s.loop_pre_ms for s in validating]
    assert all(s.workers_started for s in validating)
    model_ms = statistics.median(s.model_ms for s in training)
    assert all(s.model_ms < 5 * model_ms + 5.0 for s in validating), (
        [s.model_ms for s in validating],
        model_ms,
    )


# A second input read before the model from a new iterator each step (`next(iter(aux))`): not a pass.
# Its first read is taken for one until the optimizer steps; from then on its loader is the step's input.
SECOND_INPUT_EACH_STEP = """
import torch
from torch.utils.data import DataLoader, TensorDataset

train = DataLoader(TensorDataset(torch.randn(64 * 40, 256)), batch_size=64)
aux = DataLoader(TensorDataset(torch.randn(16 * 8, 256)), batch_size=16, shuffle=True)
model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1))
optimizer = torch.optim.SGD(model.parameters(), 0.1)
for step, (batch,) in enumerate(train):
    batch = batch + 0.0  # the loop's own work first: aux's fetch joins no zip
    (extra,) = next(iter(aux))
    model(torch.cat([batch, extra])).pow(2).mean().backward()
    optimizer.step()
    optimizer.zero_grad()
print("trained", step + 1)
"""


def test_a_second_input_read_before_the_model_is_no_pass(tmp_path: Path) -> None:
    result, (rank,) = run_under_xfertop(tmp_path, SECOND_INPUT_EACH_STEP)
    assert result.stdout == "trained 40\n", result.stderr
    steps = rank.steps
    # Each of aux's fetches joins its step: none split it in two (zip's 200 us window alone did, now and
    # then: 41, 44 or 63 steps).
    assert len(steps) == 40, len(steps)
    # aux's first fetch outside zip's window is taken for a pass until the optimizer steps in it: that one
    # step's model reads as the loop's (its hooks were off), and aux is the step's input from then on. On
    # a loaded machine that step need not be the first (a CI run: step 3).
    unmarked = [s.step for s in steps if not (s.partitioned and s.model_ms > 0)]
    assert len(unmarked) <= 1, [(s.step, s.model_ms) for s in steps]
    assert sum(s.nested_pass for s in steps) <= 1
