"""torch.save under the real `xfertop run`: the step it runs in is flagged, the save itself is the job's
own (same file, same bytes), and checkpoints that take a large share of the time are named."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ring_test_tools import child_env, run_under_xfertop
from xfertop.analysis.verdict import job_verdict

SAVING = """
import hashlib, io, sys, time
import torch
from torch.utils.data import DataLoader

state = {"weights": torch.arange(4_000_000, dtype=torch.float32)}
digests = []
for i, batch in enumerate(DataLoader(torch.zeros(240, 4), batch_size=4)):
    spin = time.perf_counter()
    while time.perf_counter() - spin < 0.004:
        pass
    if i % 6 == 5:
        buffer = io.BytesIO()
        torch.save(state, buffer)
        digests.append(hashlib.sha256(buffer.getvalue()).hexdigest()[:12])
torch.save(state, sys.argv[1] if len(sys.argv) > 1 else "/dev/null")
print(len(set(digests)), digests[0])
"""


def test_checkpoint_steps_are_flagged_and_named_and_the_save_is_unchanged(tmp_path: Path) -> None:
    result, (rank,) = run_under_xfertop(tmp_path, SAVING)
    plain = subprocess.run(
        [sys.executable, str(tmp_path / "train.py")],
        env=child_env(tmp_path / "plain-rings"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.stdout == plain.stdout  # the same bytes saved, with and without xfertop
    assert result.stdout.split()[0] == "1"
    flagged = [s.step for s in rank.steps if s.checkpoint]
    assert flagged == list(range(5, 60, 6))
    typical = sorted(s.wall_ms for s in rank.steps)[len(rank.steps) // 2]
    assert min(s.wall_ms for s in rank.steps if s.checkpoint) > typical
    verdict = job_verdict([rank])
    assert any(line.startswith("torch.save ran in ") for line in verdict.advice), verdict.advice
