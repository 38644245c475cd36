"""A DataLoader with workers and batches of one sample, under the real `xfertop run`: each batch's fixed
cost of reaching the loop from a worker is the wait, not the samples' own, and the advice says to raise
batch_size first (session 28's j41 had read "make each sample cheaper ... or run on more cores")."""

from __future__ import annotations

from pathlib import Path

import pytest

from ring_test_tools import run_under_xfertop
from xfertop.analysis.thresholds import TINY_BATCH_MAX_WAIT_MS
from xfertop.analysis.verdict import job_verdict, window_or_early

ONE_SAMPLE_BATCHES = """
import torch
from torch.utils.data import DataLoader, TensorDataset

model = torch.nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), 0.1)
loader = DataLoader(TensorDataset(torch.randn(400, 8)), batch_size=BATCH, num_workers=2)
for (batch,) in loader:
    model(batch).sum().backward()
    optimizer.step()
print("done")
"""


def test_batches_of_one_sample_from_workers_are_told_to_grow(tmp_path: Path) -> None:
    result, (rank,) = run_under_xfertop(tmp_path, "BATCH = 1\n" + ONE_SAMPLE_BATCHES, summary=True)
    assert result.stdout.splitlines()[-1] == "done"
    stats = window_or_early(rank.steps)
    assert stats is not None
    if stats.data_wait.p50_ms > TINY_BATCH_MAX_WAIT_MS:
        # A batch's fixed cost of crossing from a worker is ~0.6-1.4 ms on an idle 2-core VM; a full CI run
        # once made it more than the rule's bound (its advice then, rightly, "raise num_workers").
        pytest.skip(
            f"the machine is too loaded to show a batch's fixed cost: {stats.data_wait.p50_ms:.1f} ms"
        )
    verdict = job_verdict([rank])
    assert verdict.kind == "input-bound", verdict.headline
    assert verdict.advice[0].startswith("Each batch holds 1 sample on average and waits"), verdict.advice
    assert "Raise batch_size" in verdict.advice[0]
    # Neither more workers nor cheaper samples: the cost is each batch's, paid in the main process.
    assert not any("num_workers" in line or "each sample cheaper" in line for line in verdict.advice)
    summary = result.stderr[result.stderr.index("xfertop run: ") :]
    assert "advice: Each batch holds 1 sample on average" in summary, summary
