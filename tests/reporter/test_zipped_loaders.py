"""Two loaders zipped in one loop (``for a, b in zip(fast, slow)``), under the real `xfertop run`: one
iteration is one step whose data wait holds both fetches, and the loader that holds training up names the
workers count, whichever of them zip asks first."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from ring_test_tools import run_under_xfertop

# Both zipped jobs' slow loader: 4 ms of sleep a sample (storage latency), read in the loop.
SLOW_DATASET = """
import json, time
import torch
from torch.utils.data import DataLoader, Dataset

class Slow(Dataset):
    def __len__(self):
        return 60
    def __getitem__(self, index):
        time.sleep(0.004)
        return torch.ones(4)
"""

# A fast loader with 2 workers (in memory) zipped with a slow one read in the loop (num_workers=0, 4 ms of
# sleep a sample: storage latency), then 4 ms of busy compute. The job times its own truth: the wait in
# next() of both, over the loop's wall time.
ZIPPED = (
    SLOW_DATASET
    + """
fast = DataLoader(torch.zeros(60, 4), batch_size=2, num_workers=2)
slow = DataLoader(Slow(), batch_size=2, num_workers=0)
iterations, waited = 0, 0.0
pairs = zip(fast, slow)
first = time.perf_counter()
while True:
    asked = time.perf_counter()
    try:
        a, b = next(pairs)
    except StopIteration:
        break
    waited += time.perf_counter() - asked
    iterations += 1
    spin = time.perf_counter()
    while time.perf_counter() - spin < 0.004:
        pass
print(json.dumps({"iterations": iterations, "data_share": waited / (time.perf_counter() - first)}))
"""
)


def test_zipped_loaders_make_one_step_per_iteration_and_the_slow_one_names_the_workers(
    tmp_path: Path,
) -> None:
    result, (rank,) = run_under_xfertop(tmp_path, ZIPPED)
    truth = json.loads(result.stdout.splitlines()[-1])
    assert truth["iterations"] == 30
    assert len(rank.steps) == 30, "one step per iteration, not one per loader"
    assert all(step.samples == 2 for step in rank.steps)
    steady = rank.steps[2:]
    share = sum(s.data_wait_ms for s in steady) / sum(s.wall_ms for s in steady)
    assert abs(share - truth["data_share"]) < 0.1, (share, truth)
    # Each step waits for the slow loader's 2 samples (>= 8 ms of sleep), and its wall holds the compute.
    assert statistics.median(s.data_wait_ms for s in steady) >= 8.0
    assert statistics.median(s.wall_ms for s in steady) >= 12.0
    assert rank.dataloader_workers == 0, "the loader the loop waits on names the workers, not zip's first"
    # Each step's loader is the one that held it up, too: the advice is about the slow loader's workers.
    # Most steps': on a loaded machine the fast loader's two workers can fall behind for a step and hold
    # it up themselves (CI: one step in 28 said 2 workers), which that step then rightly says.
    slow_steps = sum(s.loader_workers == 0 for s in steady)
    assert slow_steps >= 0.8 * len(steady), [s.loader_workers for s in steady]


# Zipped with a generator of the job's own between the two loaders (augmentation parameters drawn per
# batch: 1 ms of CPU) that runs inside zip's one call: nothing of the loop's runs between the fetches, so
# they are one step however long the time between them (a garbage collection there split CI's steps).
ZIPPED_WITH_WORK_BETWEEN = (
    SLOW_DATASET
    + """
def parameters():
    while True:
        spin = time.perf_counter()
        while time.perf_counter() - spin < 0.001:
            pass
        yield 0.5

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
fast = DataLoader(torch.zeros(60, 4), batch_size=2, num_workers=2)
slow = DataLoader(Slow(), batch_size=2, num_workers=0)
iterations, waited = 0, 0.0
pairs = zip(fast, parameters(), slow)
first = time.perf_counter()
while True:
    asked = time.perf_counter()
    try:
        a, p, b = next(pairs)
    except StopIteration:
        break
    waited += time.perf_counter() - asked
    iterations += 1
    loss = model(a * p + b).sum()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    spin = time.perf_counter()
    while time.perf_counter() - spin < 0.004:
        pass
print(json.dumps({"iterations": iterations, "data_share": waited / (time.perf_counter() - first)}))
"""
)


def test_zipped_loaders_with_the_jobs_own_work_inside_zip_are_still_one_step(tmp_path: Path) -> None:
    result, (rank,) = run_under_xfertop(tmp_path, ZIPPED_WITH_WORK_BETWEEN)
    truth = json.loads(result.stdout.splitlines()[-1])
    assert truth["iterations"] == 30
    assert len(rank.steps) == 30, "one step per iteration: the loop never ran between the fetches"
    steady = rank.steps[2:]
    # The time inside zip is the loop's wait for data, as the job's own clock around next() has it.
    share = sum(s.data_wait_ms for s in steady) / sum(s.wall_ms for s in steady)
    assert abs(share - truth["data_share"]) < 0.04, (share, truth)
    # The slow loader's 2 samples (>= 8 ms of sleep) and the 1 ms generator between the fetches.
    assert statistics.median(s.data_wait_ms for s in steady) >= 9.0


# Two loaders asked in turns from one call site (multi-task training), a tiny model step on each batch:
# each fetch is a step of its own. The model's call is what tells it from zip, not the time between (a
# tiny model's step can take less CPU than zip's window).
IN_TURNS = """
import json, time
import torch
from torch.utils.data import DataLoader

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loaders = [DataLoader(torch.full((40, 4), float(k)), batch_size=2) for k in range(2)]
iterators = [iter(loader) for loader in loaders]
fetches = 0
for step in range(40):
    batch = next(iterators[step % 2])
    fetches += 1
    model(batch).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
print(json.dumps({"fetches": fetches}))
"""


def test_loaders_asked_in_turns_from_one_call_with_a_model_between_are_steps_of_their_own(
    tmp_path: Path,
) -> None:
    result, (rank,) = run_under_xfertop(tmp_path, IN_TURNS)
    assert json.loads(result.stdout.splitlines()[-1]) == {"fetches": 40}
    # Every fetch is a step (the last, left open by the loop's end, is written at exit: its model ran),
    # but maybe the second loader's first: a new iterator's first next() after the open step's model reads
    # as a validation pass until its batch trains (StepClock._nests), and stays inside that step.
    assert len(rank.steps) in (39, 40)
    # Its wait counts from its next(), not from its iter() at setup, before the step began.
    assert all(step.data_wait_ms <= step.wall_ms for step in rank.steps)
    assert all(step.samples == 2 for step in rank.steps)


def test_a_loop_preempted_between_zipped_fetches_still_joins_them(monkeypatch) -> None:
    """On a busy machine the loop can lose the CPU for a scheduler slice between zip's two next() calls:
    4 ms of wall time with 50 us of the loop's own CPU time is still one step; 500 us of CPU is the
    loop's own work, and the next fetch opens a step of its own."""
    from xfertop.reporter import _loader_workers
    from xfertop.reporter._loader_workers import JOINED_FETCH_NS, ZippedFetches

    for cpu_between_us, joined in ((50, True), (500, False)):
        cpu = iter([1_000_000, 1_000_000 + cpu_between_us * 1000])
        monkeypatch.setattr(_loader_workers, "_thread_ns", lambda cpu=cpu: next(cpu))
        fetches = ZippedFetches()
        fetches.opened()
        assert fetches.joins(20 * JOINED_FETCH_NS) is joined
    # A job that never zipped reads the thread's CPU clock at its first steps only.
    reads: list[int] = []
    monkeypatch.setattr(_loader_workers, "_thread_ns", lambda: reads.append(1) or 1)
    plain = ZippedFetches()
    for _ in range(10):
        plain.opened()
    assert len(reads) == 3
    # A new epoch's first next() also asks inside the step before it, long after that step's batch: it
    # does not join, and the steps after it read no CPU clock either (a system call a step, for good).
    assert plain.joins(20 * JOINED_FETCH_NS) is False
    for _ in range(10):
        plain.opened()
    assert len(reads) == 3


def test_the_call_site_joins_only_a_fetch_from_the_same_call_before_the_model(monkeypatch) -> None:
    """Past both time windows (500 us of the loop's CPU between the fetches), a fetch joins where it is
    asked from the frame and instruction that fetched the step's batch, the watch seeing the model and no
    model call made since; a next() no Python code called (no frame) joins by time alone."""
    import sys

    from xfertop.reporter import _loader_workers
    from xfertop.reporter._loader_workers import JOINED_FETCH_NS, ZippedFetches

    def fetched(frame, then=None, *, model_watched: bool = True, worked: bool = False) -> bool:
        """The step's batch fetched from ``frame``, the next fetch from ``then`` (the same frame unless
        given), 500 us of the loop's CPU between them."""
        fetches = ZippedFetches()
        cpu = iter([1_000_000, 1_500_000])
        monkeypatch.setattr(_loader_workers, "_thread_ns", lambda: next(cpu))
        fetches.asked_from(frame)
        fetches.opened()
        fetches.asked_from(frame if then is None else then)
        return fetches.joins(20 * JOINED_FETCH_NS, model_watched, worked)

    here = sys._getframe()
    assert fetched(here) is True
    assert fetched(here, worked=True) is False, "the model ran between: a step of its own"
    assert fetched(here, model_watched=False) is False, "nothing tells the loop's work"
    assert fetched(None) is False
    assert fetched(here, then=sys._getframe(1)) is False, "another frame: the loop moved on"
