"""Where a sync-every-step job's time goes, phase by phase, plain or under `xfertop run`.

Scenario h's loop (benchmarks/scenarios/sync_every_step.py: a pinned DataLoader with two workers, two
non_blocking copies, an MLP step, ``loss.item()`` and ``.cpu().tolist()`` every step, then Python over the
batch), with each phase timed on the host clock without synchronising: wall time and the main thread's
CPU time, per step. Run it plain and under `xfertop run` in turn; the phase that grows is where the
reporter's cost lands (its own code, or the waits it lengthens). Also times ``Tensor.is_pinned()`` and
``data_ptr()`` of the batch inside the loop, where the DataLoader's pin-memory thread is busy beside it.

    python benchmarks/sync_job_phases.py --seconds 12 [--json OUT] [--pinned-ab]
    xfertop run --no-summary -- python benchmarks/sync_job_phases.py --seconds 12

Prints one JSON line: steps, samples/s, and per phase its wall and CPU microseconds per step.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

from xfertop.reporter._copy import PinnedMemo

CLASSES = 100
WARMUP_STEPS = 20
PHASES = ("next", "pin_check", "ptr_check", "copy", "pinned_a", "pinned_b", "model", "sync", "post")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=12.0)
    parser.add_argument("--json", help="also write the result here")
    parser.add_argument(
        "--pinned-ab",
        action="store_true",
        help="after each step's copies, ask whether the batch is pinned: is_pinned() on even steps, the "
        "reporter's PinnedMemo on odd ones (phases pinned_a and pinned_b), side by side in one run",
    )
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    torch.manual_seed(0)
    features, width, batch = (512, 4096, 256) if cuda else (256, 2048, 128)
    g = torch.Generator().manual_seed(0)
    data = TensorDataset(
        torch.randn(16384, features, generator=g), torch.randint(0, CLASSES, (16384,), generator=g)
    )
    loader = DataLoader(
        data,
        batch_size=batch,
        shuffle=True,
        num_workers=2,
        pin_memory=cuda,
        persistent_workers=True,
        drop_last=True,
    )
    model = nn.Sequential(
        nn.Linear(features, width), nn.GELU(), nn.Linear(width, width), nn.GELU(), nn.Linear(width, CLASSES)
    ).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    memo = PinnedMemo()
    wall = dict.fromkeys(PHASES, 0)
    cpu = dict.fromkeys(PHASES, 0)
    now, thread = time.perf_counter_ns, time.thread_time_ns
    steps = counted = 0
    deadline = None
    began_wall = began_cpu = 0
    gc_before = 0
    confusion = [[0] * CLASSES for _ in range(CLASSES)]
    running = 0.0

    def mark(name: str, w0: int, c0: int) -> tuple[int, int]:
        w1, c1 = now(), thread()
        if steps >= WARMUP_STEPS:
            wall[name] += w1 - w0
            cpu[name] += c1 - c0
        return w1, c1

    done = False
    while not done:
        iterator = iter(loader)
        w, c = now(), thread()
        for x, y in iterator:
            w, c = mark("next", w, c)
            if not args.pinned_ab:  # before the copy: the first touch of the batch in the loop
                x.is_pinned()
                y.is_pinned()
                w, c = mark("pin_check", w, c)
                x.data_ptr()
                y.data_ptr()
                w, c = mark("ptr_check", w, c)
            hx, hy = x, y
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            w, c = mark("copy", w, c)
            if args.pinned_ab:
                if steps % 2:
                    memo.pinned(hx)
                    memo.pinned(hy)
                    w, c = mark("pinned_b", w, c)
                else:
                    hx.is_pinned()
                    hy.is_pinned()
                    w, c = mark("pinned_a", w, c)
                if steps % 256 == 0:
                    memo.clear()  # as the step clock's tick would, about once a second
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            w, c = mark("model", w, c)
            running += loss.item()
            scores = logits.detach().cpu().tolist()
            labels = y.cpu().tolist()
            w, c = mark("sync", w, c)
            for row, label in zip(scores, labels, strict=True):
                top5 = sorted(range(CLASSES), key=row.__getitem__)[-5:]
                confusion[label][top5[-1]] += 1
            w, c = mark("post", w, c)
            steps += 1
            if steps == WARMUP_STEPS:
                began_wall, began_cpu = now(), thread()
                gc_before = sum(s["collections"] for s in gc.get_stats())
                deadline = began_wall + int(args.seconds * 1e9)
            elif steps > WARMUP_STEPS:
                counted += 1
                if w >= deadline:
                    done = True
                    break
            w, c = now(), thread()
    loop_wall, loop_cpu = now() - began_wall, thread() - began_cpu
    out = {
        "under_xfertop": os.environ.get("XFERTOP_RUN") == "1",
        "steps": counted,
        "samples_per_s": round(counted * batch / (loop_wall / 1e9), 1),
        "step_us": round(loop_wall / counted / 1e3, 2),
        "main_thread_cpu_us": round(loop_cpu / counted / 1e3, 2),
        "gc_collections_per_step": round(
            (sum(s["collections"] for s in gc.get_stats()) - gc_before) / counted, 3
        ),
        "wall_us": {k: round(v / counted / 1e3, 2) for k, v in wall.items()},
        "cpu_us": {k: round(v / counted / 1e3, 2) for k, v in cpu.items()},
    }
    line = json.dumps(out)
    print(line, flush=True)
    if args.json:
        with open(args.json, "w") as f:
            f.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
