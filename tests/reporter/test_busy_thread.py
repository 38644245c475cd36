"""A Python thread of the job's own busy beside the training loop, under the real `xfertop run`: the
reporter names the busiest one that used 30% of a core or more over its last second, and the verdict's
first advice says it holds the loop's Python back (threads take turns on one GIL). Session 28's j40: a
metrics thread smoothing its history in Python made each step 17x longer, its parts' shares unchanged."""

from __future__ import annotations

from pathlib import Path

from ring_test_tools import run_under_xfertop
from xfertop.analysis.verdict import job_verdict

BUSY_THREAD = """
import os, threading, time
import torch
from torch.utils.data import DataLoader, TensorDataset
from xfertop.sources.jobs.source import JobsSource

def named():  # the job's own ring names the busy thread (the reporter reads threads once a second)
    jobs = JobsSource(ring_dir=os.environ["XFERTOP_DIR"]).sample().jobs
    return any(rank.busy_thread for job in jobs for rank in job.ranks)

history = [{"step": i, "loss": 0.1 * i} for i in range(20_000)]

def metrics():  # smooths the history in Python, over and over
    while True:
        level = 0.0
        for record in history:
            level = 0.9 * level + 0.1 * record["loss"]
        time.sleep(0.0005)

if BUSY:
    threading.Thread(target=metrics, daemon=True, name="metrics").start()
model = torch.nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), 0.1)
loader = DataLoader(TensorDataset(torch.randn(1_000_000, 8)), batch_size=4)
started = seen = time.monotonic()
for step, (batch,) in enumerate(loader):
    model(batch).sum().backward()
    optimizer.step()
    # Busy: until the ring names the thread, then 2.5 s more (the summary's follower reads the ring each
    # second); not busy: 2.5 s, two of the reporter's ticks after its first.
    if BUSY and seen == started and step % 20 == 0 and named():
        seen = time.monotonic()
    if time.monotonic() - seen > 2.5 and (seen > started or not BUSY):
        break
    assert time.monotonic() - started < 60, "the ring never named the busy thread"
print("done")
"""


def test_a_busy_python_thread_beside_the_loop_is_named_first_in_the_advice(tmp_path: Path) -> None:
    result, (rank,) = run_under_xfertop(tmp_path, "BUSY = True\n" + BUSY_THREAD, summary=True)
    assert result.stdout.splitlines()[-1] == "done"
    assert rank.busy_thread == "metrics" and rank.busy_thread_share >= 0.3, rank.busy_thread_share
    verdict = job_verdict([rank])
    assert verdict.advice[0].startswith('A Python thread of the job\'s own ("metrics") ran ')
    assert "one GIL" in verdict.advice[0]
    assert verdict.evidence["busy_thread"] == "metrics"
    summary = result.stderr[result.stderr.index("xfertop run: ") :]
    assert 'advice: A Python thread of the job\'s own ("metrics")' in summary, summary


def test_a_loop_without_one_names_none(tmp_path: Path) -> None:
    result, (rank,) = run_under_xfertop(tmp_path, "BUSY = False\n" + BUSY_THREAD)
    assert result.stdout.splitlines()[-1] == "done"
    assert (rank.busy_thread, rank.busy_thread_share) == ("", 0.0)
    assert not any("Python thread" in line for line in job_verdict([rank]).advice)
