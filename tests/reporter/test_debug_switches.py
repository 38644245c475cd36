"""Debugging switches a training job runs with, under the real `xfertop run`: the reporter reads them once
a second into the ring's state flags, and every verdict's first advice names them (each slows every step,
and nothing in the step's parts says why). A switch turned off is cleared."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ring_test_tools import run_under_xfertop
from xfertop.analysis.advice import debug_switch_advice
from xfertop.analysis.verdict import job_verdict

SWITCHED_ON = """
import os, sys, time
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.autograd.set_detect_anomaly(True)   # left on after a debugging session
sys.settrace(lambda frame, event, arg: None)  # as a debugger or coverage does on the loop's thread
model = torch.nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), 0.1)
loader = DataLoader(TensorDataset(torch.randn(512, 8)), batch_size=4)
for (batch,) in loader:
    model(batch).sum().backward()
    optimizer.step()
print("done")
"""

# Anomaly detection around the first steps, until the job sees the flag in its own ring, then 1.5 s of
# steps without it (the reporter reads the switches once a second, at a step's end).
SWITCHED_OFF = """
import os, time
import torch
from torch.utils.data import DataLoader, TensorDataset
from xfertop.sources.jobs.source import JobsSource

def flagged():
    jobs = JobsSource(ring_dir=os.environ["XFERTOP_DIR"]).sample().jobs
    return any("anomaly_detection" in rank.debug_switches for job in jobs for rank in job.ranks)

model = torch.nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), 0.1)
loader = DataLoader(TensorDataset(torch.randn(100_000, 8)), batch_size=4)
batches = iter(loader)
with torch.autograd.detect_anomaly():
    on = time.monotonic()
    while not flagged():
        assert time.monotonic() - on < 30, "the ring never showed anomaly detection"
        for _ in range(20):
            (batch,) = next(batches)
            model(batch).sum().backward()
            optimizer.step()
print("flagged")
off = time.monotonic()
for (batch,) in batches:
    model(batch).sum().backward()
    optimizer.step()
    if time.monotonic() - off > 1.5:
        break
print("done")
"""


def test_switches_left_on_are_in_the_ring_and_lead_the_verdicts_advice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")  # set, but this job runs on the CPU
    result, (rank,) = run_under_xfertop(tmp_path, SWITCHED_ON, summary=True)
    assert result.stdout.splitlines()[-1] == "done"
    assert rank.debug_switches == ("anomaly_detection", "python_tracer", "cuda_launch_blocking")
    verdict = job_verdict([rank])
    assert verdict.advice[0].startswith("Autograd anomaly detection is on"), verdict.advice
    assert verdict.advice[1].startswith("A Python tracer is active on the training loop's thread")
    assert not any("CUDA_LAUNCH_BLOCKING" in line for line in verdict.advice)  # no GPU: no effect
    assert verdict.evidence["debug_switches"] == [
        "anomaly_detection",
        "cuda_launch_blocking",
        "python_tracer",
    ]
    summary = result.stderr[result.stderr.index("xfertop run: ") :]
    assert "advice: Autograd anomaly detection is on" in summary, summary


def test_a_switch_turned_off_is_cleared(tmp_path: Path) -> None:
    assert "CUDA_LAUNCH_BLOCKING" not in os.environ
    result, (rank,) = run_under_xfertop(tmp_path, SWITCHED_OFF)
    assert result.stdout.splitlines()[-2:] == ["flagged", "done"]
    assert rank.debug_switches == ()
    assert not any("anomaly" in line for line in job_verdict([rank]).advice)


# torch.cuda.empty_cache() `calls` times in each step of `every`, in a loop that runs 1.5 s past its first
# ring tick. This machine has no GPU: CUDA says it is initialised (the hardware boundary), and torch's own
# empty_cache, which asks its module's own binding, still does nothing.
EMPTY_CACHE = """
import time
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.cuda.is_initialized = lambda: True
model = torch.nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), 0.1)
began = time.monotonic()
for index, (batch,) in enumerate(DataLoader(TensorDataset(torch.randn(1_000_000, 8)), batch_size=4)):
    model(batch).sum().backward()
    optimizer.step()
    if index % {every} == 0:
        for _ in range({calls}):
            torch.cuda.empty_cache()
    if time.monotonic() - began > {seconds}:
        break
print("done")
"""


@pytest.mark.parametrize(
    ("every", "calls", "flagged", "seconds"),
    [
        (1, 1, True, 2.5),
        (2, 1, True, 2.5),
        (50, 1, False, 2.5),
        # Twenty calls in one step of ten (a maintenance step): the steps that pay are one in ten.
        (10, 20, False, 2.5),
        # A loop that ends before the ring's next tick (an H100 ran 1,023 such steps in under a second, and
        # its job read no switch): judged as the ring closes.
        (1, 1, True, 0.3),
    ],
)
def test_empty_cache_in_most_steps_is_a_switch_of_its_own(
    tmp_path: Path, every: int, calls: int, flagged: bool, seconds: float
) -> None:
    job = EMPTY_CACHE.format(every=every, calls=calls, seconds=seconds)
    result, (rank,) = run_under_xfertop(tmp_path, job)
    assert result.stdout.splitlines()[-1] == "done"
    assert len(rank.steps) > 100
    assert ("empty_cache_every_step" in rank.debug_switches) is flagged, rank.debug_switches
    # A CPU job's empty_cache does nothing: no advice. On a GPU it leads the advice as the others do.
    assert not any("empty_cache" in line for line in job_verdict([rank]).advice)
    gpu_advice = debug_switch_advice(rank.debug_switches, on_gpu=True)
    named = any(line.startswith("torch.cuda.empty_cache() runs every step or nearly") for line in gpu_advice)
    assert named is flagged
