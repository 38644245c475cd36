"""On a real GPU: `xfertop probe`'s pinned phase moves a pageable job's replayed batches into pinned memory,
and its copies-free phase hands back the device copies, on a job whose step is mostly its copy.

Run on the GPU machine: ``pytest -m gpu tests/gpu/test_probe_gpu.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ring_test_tools import child_env

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

#: 64 MB pageable batches copied with non_blocking=True, then a small matmul: the copy is the step.
PAGEABLE = """
import torch
from torch.utils.data import DataLoader, Dataset

class Shards(Dataset):
    def __init__(self):
        self.batch = torch.randn(64, 1024, 256)
    def __len__(self):
        return 100_000
    def __getitem__(self, index):
        return self.batch

weight = torch.randn(256, 256, device="cuda")
for batch in DataLoader(Shards(), batch_size=None):
    x = batch.to("cuda", non_blocking=True)
    (x @ weight).sum().item()
"""


def test_a_pageable_jobs_batches_are_pinned_then_made_resident(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(PAGEABLE))
    done = subprocess.run(
        [sys.executable, "-m", "xfertop", "probe", "--json", "--steps", "15", "--warmup", "5", "--",
         sys.executable, str(script)],
        env=child_env(tmp_path / "rings"), capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (rank,) = json.loads(done.stdout.splitlines()[-1])["ranks"]
    assert rank["tensors_pinned"] >= 1 and rank["copies_made_resident"] >= 1, rank
    # Pinned copies run at several times the pageable rate; no copy at all is faster still.
    assert rank["speedup_pinned"] > 1.3, rank
    assert rank["speedup_copy_free"] > rank["speedup_pinned"], rank
