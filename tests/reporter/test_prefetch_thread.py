"""A job that reads its DataLoader on a thread of its own (a prefetcher filling a queue), under the real
`xfertop run`: the step clock's waits are that thread's, so the ring says so and the loop's parts are not
measured; the prefetcher's waits still tell a loader that keeps it waiting (input-bound) from one that
keeps up. A job whose whole training loop runs on a thread (loader, model and optimizer) is measured as
any."""

from __future__ import annotations

from pathlib import Path

from ring_test_tools import run_under_xfertop
from xfertop.analysis.verdict import job_verdict

PREFETCHED = """
import queue, threading, time
import torch
from torch.utils.data import DataLoader, Dataset

class Slow(Dataset):
    def __len__(self):
        return 120
    def __getitem__(self, index):
        time.sleep(0.002)
        return torch.ones(4)

class Prefetcher:
    def __init__(self, loader):
        self.queue = queue.Queue(maxsize=2)
        threading.Thread(target=self._fill, args=(loader,), daemon=True).start()
    def _fill(self, loader):
        for batch in loader:
            self.queue.put(batch)
        self.queue.put(None)
    def next(self):
        return self.queue.get()

prefetcher = Prefetcher(DataLoader(Slow(), batch_size=2))
while (batch := prefetcher.next()) is not None:
    # The loop computes longer than a batch takes to load, with the GIL released as torch's kernels do
    # it (a loop busy in Python would slow the prefetcher's thread down to the loop's pace).
    time.sleep(0.008)
print("done")
"""

# The same prefetcher, with a model and an optimizer stepping in the main thread's loop.
PREFETCHED_TRAINING = PREFETCHED.replace(
    "    time.sleep(0.008)\n",
    "    model(batch).sum().backward()\n    optimizer.step()\n    time.sleep(0.008)\n",
).replace(
    "prefetcher = Prefetcher(",
    "model = torch.nn.Linear(4, 1)\n"
    "optimizer = torch.optim.SGD(model.parameters(), 0.1)\n"
    "prefetcher = Prefetcher(",
)

# The prefetcher over a loader slower than the loop: 12 ms a batch (num_workers=0), the loop 1 ms. Its
# queue stays empty and the loop waits in get() for each batch.
STARVED_PREFETCHER = PREFETCHED_TRAINING.replace("time.sleep(0.002)", "time.sleep(0.006)").replace(
    "time.sleep(0.008)", "time.sleep(0.001)"
)

# The whole loop on a thread of the job's own (a service that trains in the background): each sample
# takes 4 ms to load (num_workers=0), the model step far less.
TRAINING_THREAD = """
import threading, time
import torch
from torch.utils.data import DataLoader, Dataset

class Slow(Dataset):
    def __len__(self):
        return 120
    def __getitem__(self, index):
        time.sleep(0.004)
        return torch.ones(4)

def train():
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), 0.1)
    loader = DataLoader(Slow(), batch_size=2)
    for epoch in range(2):
        for batch in loader:
            model(batch).sum().backward()
            optimizer.step()
    for batch in DataLoader(Slow(), batch_size=60):  # a validation pass last: no optimizer step after it
        model(batch)

trainer = threading.Thread(target=train, name="trainer")
trainer.start()
trainer.join()
print("done")
"""

PLAIN = """
import torch
from torch.utils.data import DataLoader
for batch in DataLoader(torch.zeros(64, 4), batch_size=2):
    pass
"""


def _run(tmp_path: Path, code: str) -> list:
    return run_under_xfertop(tmp_path, code)[1]


def test_a_loader_read_on_a_prefetch_thread_is_said_and_gets_no_verdict_from_its_waits(
    tmp_path: Path,
) -> None:
    (rank,) = _run(tmp_path, PREFETCHED)
    assert rank.loader_off_thread
    assert len(rank.steps) == 60  # the prefetcher's next() calls are still timed
    verdict = job_verdict([rank])
    assert verdict.kind == "warming-up"
    assert verdict.headline.startswith("not measured: the DataLoader is read on a background thread")
    # The loop (8 ms) empties the queue slower than the loader (4 ms) fills it: the prefetcher waits
    # for the loader about half its time and blocks on the full queue for the rest.
    assert "the DataLoader keeps up with that thread, which waits for it" in verdict.headline
    assert 0.2 < verdict.evidence["prefetcher_wait_share"] < 0.8, verdict.evidence
    assert "xfertop attach PID" in verdict.advice[0]


def test_a_loader_read_in_the_main_thread_is_not_flagged(tmp_path: Path) -> None:
    (rank,) = _run(tmp_path, PLAIN)
    assert not rank.loader_off_thread


def test_the_end_of_run_summary_does_not_give_the_prefetchers_waits_as_the_loops(tmp_path: Path) -> None:
    result, _ = run_under_xfertop(tmp_path, PREFETCHED, summary=True)
    summary = result.stderr[result.stderr.index("xfertop run: ") :]
    assert "where the time went: not measured (the DataLoader is read on a background thread" in summary
    assert "that thread waited for the DataLoader " in summary
    assert "data wait" not in summary
    assert "s not measured" in summary.split("verdicts: ", 1)[1].splitlines()[0], summary


def test_a_prefetcher_beside_a_loop_that_steps_an_optimizer_is_still_a_prefetcher(tmp_path: Path) -> None:
    (rank,) = _run(tmp_path, PREFETCHED_TRAINING)
    assert rank.loader_off_thread
    assert job_verdict([rank]).headline.startswith("not measured: the DataLoader is read on a background")


def test_a_prefetcher_that_the_loader_keeps_waiting_reads_input_bound_in_the_verdict_and_summary(
    tmp_path: Path,
) -> None:
    result, (rank,) = run_under_xfertop(tmp_path, STARVED_PREFETCHER, summary=True)
    assert result.stdout.splitlines()[-1] == "done"
    assert rank.loader_off_thread
    verdict = job_verdict([rank])
    assert (verdict.kind, verdict.rule) == ("input-bound", "prefetcher-starved"), verdict.headline
    assert verdict.headline.startswith("input-bound: the job's prefetch thread waits for the DataLoader")
    assert verdict.headline.endswith("(num_workers=0)")
    assert verdict.evidence["prefetcher_wait_share"] >= 0.9
    assert any("num_workers" in line for line in verdict.advice), verdict.advice
    summary = result.stderr[result.stderr.index("xfertop run: ") :]
    assert "s input-bound" in summary.split("verdicts: ", 1)[1].splitlines()[0], summary
    assert "last verdict: input-bound: the job's prefetch thread waits" in summary


def test_a_training_loop_on_a_thread_of_its_own_is_measured_as_any(tmp_path: Path) -> None:
    result, (rank,) = run_under_xfertop(tmp_path, TRAINING_THREAD, summary=True)
    assert result.stdout.splitlines()[-1] == "done"
    assert not rank.loader_off_thread
    assert len(rank.steps) == 2 * 60 + 2
    verdict = job_verdict([rank])
    assert verdict.kind == "input-bound", verdict.headline
    summary = result.stderr[result.stderr.index("xfertop run: ") :]
    assert "where the time went (host, whole run): data wait " in summary, summary
