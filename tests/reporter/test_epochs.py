"""Epoch boundaries under the real `xfertop run`: worker start-up at iter(loader) is the data wait of the
epoch's first step (not compute of the step before), and the training loader names the workers count
even when a validation loader is iterated last."""

from __future__ import annotations

import itertools
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

from ring_test_tools import child_env, ranks
from xfertop.analysis.steps import between_iterations_ms
from xfertop.sources.jobs.source import JobsSource

EPOCHS = """
import json, multiprocessing.util, sys, time
import torch
from torch.utils.data import DataLoader, Dataset

START_S = 0.25   # each worker sleeps this long when it starts: worker start-up, every epoch
STOP_S = 0.2     # and this long when it exits

def slow_start(_worker_id):
    time.sleep(START_S)
    # ... and a slow exit: the pass's last next() waits for it when it shuts the workers down.
    multiprocessing.util.Finalize(None, time.sleep, args=(STOP_S,), exitpriority=10)

class Numbers(Dataset):
    def __len__(self):
        return 6 * 8
    def __getitem__(self, i):
        return torch.full((4,), float(i))

train = DataLoader(Numbers(), batch_size=8, num_workers=2, worker_init_fn=slow_start)
val = DataLoader(Numbers(), batch_size=16, num_workers=0)
iter_s = []
for epoch in range(4):
    began = time.perf_counter()
    iterator = iter(train)
    iter_s.append(time.perf_counter() - began)
    for batch in iterator:
        spin = time.perf_counter()
        while time.perf_counter() - spin < 0.004:
            pass
    for batch in val:   # the validation pass: last iterated, num_workers=0
        pass
print(json.dumps({"iter_s": iter_s}))
"""


def test_worker_start_up_is_the_first_steps_wait_and_the_training_loader_names_the_workers(
    tmp_path: Path,
) -> None:
    rings = tmp_path / "rings"
    script = tmp_path / "epochs.py"
    script.write_text(textwrap.dedent(EPOCHS))
    result = subprocess.run(
        [sys.executable, "-m", "xfertop.cli.run", "--no-copy-timing", "--", sys.executable, str(script)],
        env=child_env(rings),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    (rank,) = ranks(JobsSource(ring_dir=str(rings)))
    steps = rank.steps
    # 4 epochs x (6 training steps + 3 validation steps).
    assert len(steps) == 4 * 9
    starts = [s for s in steps if s.epoch_start]
    assert len(starts) == 8  # each training epoch and each validation pass
    started_workers = [s for s in starts if s.workers_started]
    assert len(started_workers) == 4
    # The worker start-up (>= 0.25 s) is the wait of each training epoch's first step ...
    assert min(s.data_wait_ms for s in started_workers) >= 250
    # ... and not the compute of the step before it (the CPU clock books the rest of a step as compute).
    others = [s for s in steps if not s.workers_started]
    assert max(s.wall_ms - s.data_wait_ms for s in others) < 150
    # The training loader (the longest iteration) gives the workers count, not the validation loader ...
    assert rank.dataloader_workers == 2
    # ... and each step says which loader's batch it was: the verdict's advice names the one that waits.
    assert [s.loader_workers for s in steps] == ([2] * 6 + [0] * 3) * 4
    # The loop runs no code of its own between its passes: the workers' shutdown at each pass's end (in
    # its last next()) is the loader's time, booked with the next pass's wait, not time between passes.
    between = [between_iterations_ms(step, previous) for previous, step in itertools.pairwise(steps)]
    assert max(between) < 100, between  # each shutdown takes >= 200 ms
    assert not rank.copy_timing


def test_copy_timing_is_said_in_the_ring(tmp_path: Path) -> None:
    rings = tmp_path / "rings"
    script = tmp_path / "tiny.py"
    script.write_text(
        textwrap.dedent("""
        import torch
        from torch.utils.data import DataLoader
        for batch in DataLoader(torch.zeros(64, 4), batch_size=8):
            batch = batch.to("cpu")
    """)
    )
    result = subprocess.run(
        [sys.executable, "-m", "xfertop.cli.run", "--", sys.executable, str(script)],
        env=child_env(rings),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    (rank,) = ranks(JobsSource(ring_dir=str(rings)))
    assert rank.copy_timing
    assert statistics.median(s.wall_ms for s in rank.steps) < 1000
