"""A real training process with a known data wait and compute, read back through the real JobsSource."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from ring_test_tools import rank_with_steps, run_under_xfertop, start_script, wait_until
from xfertop.sources.jobs.source import JobsSource

KNOWN_LOOP = """
import json, sys, time
import torch
import xfertop

truth = {"wait_ms": [], "compute_ms": []}

def batches():
    while True:
        began = time.perf_counter_ns()
        time.sleep(0.020)                      # the data wait: the loader blocks
        batch = torch.ones(16, 8)
        truth["wait_ms"].append((time.perf_counter_ns() - began) / 1e6)
        yield batch

for index, batch in enumerate(xfertop.watch(batches())):
    batch = xfertop.to_device(batch, "meta", non_blocking=True)
    began = time.perf_counter_ns()
    while time.perf_counter_ns() - began < 10_000_000:   # 10 ms of busy compute, not a sleep
        pass
    truth["compute_ms"].append((time.perf_counter_ns() - began) / 1e6)
    if index == 40:
        break
print(json.dumps(truth))
"""


def _within(measured: float, truth: float, share: float) -> bool:
    return abs(measured - truth) <= share * truth


def test_known_wait_and_compute_are_measured_within_5_percent(tmp_path: Path) -> None:
    rings = tmp_path / "rings"
    child = start_script(tmp_path, rings, KNOWN_LOOP)
    stdout, stderr = child.communicate(timeout=60)
    assert child.returncode == 0, stderr
    truth = json.loads(stdout)
    source = JobsSource(ring_dir=str(rings))
    rank = wait_until(lambda: rank_with_steps(source, child.pid, 40), 10, "40 steps in the ring")
    steps = rank.steps[5:40]  # skip warm-up; step i's wait is truth["wait_ms"][i]
    waits = [s.data_wait_ms for s in steps]
    true_waits = truth["wait_ms"][5:40]
    # Step wall = wait + compute + loop overhead; compute is the model's part: what is left after the wait,
    # the copy and (none here: nothing ends the model's part) the loop's own work and syncs.
    computes = [s.model_ms for s in steps]
    true_computes = truth["compute_ms"][5:40]
    assert _within(statistics.median(waits), statistics.median(true_waits), 0.05), (waits, true_waits)
    assert _within(statistics.median(computes), statistics.median(true_computes), 0.05)
    assert _within(statistics.median(waits), 20.0, 0.25)
    assert _within(statistics.median(computes), 10.0, 0.25)
    assert rank.status == "finished"
    first = steps[0]
    assert first.h2d_bytes == 16 * 8 * 4 and first.samples == 16
    assert first.pageable_non_blocking and not first.pinned
    assert first.gpu_gap_ms is None  # a copy to "meta": no CUDA device, no GPU clock
    # watch() splits the step as `xfertop run` does; this loop has no model call, backward or optimizer
    # step to end the model's part, so what follows the copy is all the model's.
    assert first.partitioned and first.loop_post_ms == 0 and first.sync_ms == 0 and not first.synced
    assert statistics.median(s.loop_pre_ms for s in steps) < 0.5  # to_device right after the batch arrived


STEP_BLOCK_LOOP = """
import json, time
import xfertop

inside_ms = []
for _ in range(12):
    time.sleep(0.015)                           # fetching data outside the step
    with xfertop.step():
        began = time.perf_counter_ns()
        while time.perf_counter_ns() - began < 5_000_000:
            pass
        inside_ms.append((time.perf_counter_ns() - began) / 1e6)
print(json.dumps(inside_ms))
"""


def test_step_blocks_count_the_time_between_them_as_data_wait(tmp_path: Path) -> None:
    rings = tmp_path / "rings"
    child = start_script(tmp_path, rings, STEP_BLOCK_LOOP)
    stdout, stderr = child.communicate(timeout=60)
    assert child.returncode == 0, stderr
    inside_ms = json.loads(stdout)
    rank = wait_until(lambda: rank_with_steps(JobsSource(ring_dir=str(rings)), child.pid, 12), 10, "12 steps")
    later = rank.steps[2:]
    assert statistics.median(s.data_wait_ms for s in later) >= 15.0
    measured_inside = statistics.median(s.wall_ms - s.data_wait_ms for s in later)
    assert abs(measured_inside - statistics.median(inside_ms[2:])) < 0.5
    assert [s.step for s in rank.steps] == list(range(12))


FLAT_TOKENS = """
import torch
from torch.utils.data import DataLoader, Dataset

class Records(Dataset):  # click logs: ten hashed tokens a record
    def __len__(self):
        return 16 * 30
    def __getitem__(self, i):
        return [(i * 7 + k) % 1000 for k in range(10)], float(i % 5 == 0)

def collate(items):  # as for nn.EmbeddingBag: every token of the batch in one flat tensor
    ids, offsets = [], []
    for tokens, _ in items:
        offsets.append(len(ids))
        ids.extend(tokens)
    labels = torch.tensor([label for _, label in items])
    return torch.tensor(ids), torch.tensor(offsets), labels, torch.ones(1)  # and a per-batch scale

model = torch.nn.EmbeddingBag(1000, 8, mode="sum")
head = torch.nn.Linear(8, 1)
optimizer = torch.optim.SGD([*model.parameters(), *head.parameters()], lr=0.1)
for ids, offsets, labels, scale in DataLoader(Records(), batch_size=16, collate_fn=collate):
    loss = torch.nn.functional.binary_cross_entropy_with_logits(head(model(ids, offsets)).squeeze(1), labels)
    optimizer.zero_grad()
    (loss * scale).backward()
    optimizer.step()
print("done")
"""


def test_a_batch_whose_first_tensor_is_flat_counts_its_records_not_its_tokens(tmp_path: Path) -> None:
    # Session 48's trial: an EmbeddingBag job's (ids, offsets, labels) read as 160 samples a step (its
    # tokens), 271,000 samples/s. The samples are the shortest first dimension of two or more.
    result, (rank,) = run_under_xfertop(tmp_path, FLAT_TOKENS)
    assert result.stdout == "done\n", result.stderr
    assert len(rank.steps) >= 29 and all(s.samples == 16 for s in rank.steps), [s.samples for s in rank.steps]
