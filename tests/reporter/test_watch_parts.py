"""`xfertop.watch(loader)` splits the step as `xfertop run` does: a real CPU training process whose loop
logs in Python after the optimizer step, read back through the real JobsSource and the real analysis.

Before watch() installed the step's marks, this loop read "compute-bound: compute is 96%" (the
scenario corpus's s under watch, on the CPU VM): all that followed the batch's arrival was the model's.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from ring_test_tools import child_env, ranks, run_under_xfertop
from xfertop.analysis.verdict import rank_verdict
from xfertop.model.jobs import StepRecord
from xfertop.sources.jobs.source import JobsSource

pytest.importorskip("torch")

# The bookkeeping is long beside next() so that the unwatched loop's wait stays far below the 10% that
# reads input-bound on any machine: a slow 2-core VM takes 0.3-0.6 ms for the first next() after 8 ms of
# other work (0.07 ms back to back), which with 8 ms of logging was 5-7% of each step alone and 14% under
# three CPU burners (docs/measurements/cpu-2026-12-07-s45/README.md).
LOGGING_LOOP = """
import json, statistics, sys, time
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
import xfertop

INSTRUMENT = sys.argv[1] == "1"
torch.set_num_threads(1)  # no OpenMP threads spinning against a busy machine's other work
torch.manual_seed(0)
loader = DataLoader(TensorDataset(torch.randn(512, 32), torch.randint(0, 4, (512,))), batch_size=32)
model = nn.Linear(32, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
logged_ms = []
steps = 0
for epoch in range(3):
    for x, y in xfertop.watch(loader, instrument=INSTRUMENT):
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        began = time.perf_counter_ns()
        while time.perf_counter_ns() - began < 25_000_000:   # 25 ms of bookkeeping in Python, every step
            pass
        logged_ms.append((time.perf_counter_ns() - began) / 1e6)
        steps += 1
print(json.dumps({"steps": steps, "logged_ms": statistics.median(logged_ms) if logged_ms else 0}))
"""


def _run(tmp_path: Path, instrument: bool) -> tuple[list[StepRecord], dict[str, Any]]:
    """The loop to its end, then its ring's steps and what the loop measured itself."""
    rings = tmp_path / "rings"
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(LOGGING_LOOP))
    done = subprocess.run(
        [sys.executable, str(script), "1" if instrument else "0"],
        env=child_env(rings),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    (rank,) = ranks(JobsSource(ring_dir=str(rings)))
    return list(rank.steps), json.loads(done.stdout)


def test_watch_splits_the_loops_work_after_the_step_from_the_model(tmp_path: Path) -> None:
    steps, result = _run(tmp_path, instrument=True)
    assert result["steps"] == 48 and len(steps) == 48
    window = steps[10:]
    assert all(s.partitioned for s in window)
    post = statistics.median(s.loop_post_ms for s in window)
    assert abs(post - result["logged_ms"]) <= 0.25 * result["logged_ms"], (post, result)
    assert statistics.median(s.model_ms for s in window) < post  # a tiny Linear's step: well under 25 ms
    verdict = rank_verdict(window)
    assert (verdict.kind, verdict.rule) == ("loop-bound", "loop-work"), verdict.headline
    assert "after the step" in verdict.headline


def test_watch_without_instrument_leaves_torch_alone(tmp_path: Path) -> None:
    steps, result = _run(tmp_path, instrument=False)
    assert result["steps"] == 48
    window = steps[10:]
    assert not any(s.partitioned for s in window)
    assert all(s.loop_post_ms == 0 for s in window)  # the logging is inside the "model" part
    assert rank_verdict(window).kind == "compute-bound"


WRAPPED = """
import torch
import xfertop

for _ in xfertop.watch(range(3)):
    pass
print("wrapped" if getattr(torch.Tensor.to, "_xfertop_wrapped", False) else "plain")
"""


def test_under_xfertop_run_the_runs_choice_of_copy_timing_stands(tmp_path: Path) -> None:
    """`xfertop run --no-copy-timing` leaves Tensor.to alone, and a watch() in the script does too;
    plain `python` with watch() wraps it."""
    (tmp_path / "off").mkdir()
    (tmp_path / "on").mkdir()
    off, _ = run_under_xfertop(tmp_path / "off", WRAPPED, "--no-copy-timing")
    on, _ = run_under_xfertop(tmp_path / "on", WRAPPED)
    script = tmp_path / "plain.py"
    script.write_text(WRAPPED)
    plain = subprocess.run(
        [sys.executable, str(script)], env=child_env(tmp_path / "rings"), capture_output=True, text=True
    )
    assert plain.returncode == 0, plain.stderr
    assert (off.stdout.split(), on.stdout.split(), plain.stdout.split()) == (
        ["plain"],
        ["wrapped"],
        ["wrapped"],
    )
