"""Probe accuracy: what `xfertop probe` says freeing the input would buy, against the same job fed.

Two jobs, side by side in one run, each several times by turns:
- starved: a Dataset whose ``__getitem__`` sleeps ``--load-ms`` (storage latency: no CPU), read with
  ``num_workers=0``, then ``--compute-ms`` of busy compute a step (a model that keeps one core busy);
- fed: the same job with ``--workers`` DataLoader workers, whose sleeps overlap: compute-bound.
`xfertop probe` runs on the starved job; plain runs measure the fed job's steps. Goal (issue 21): the
probe's input-free samples/s within 20% of the fed job's. Then a compute-bound job (no load at all): its
input-free speed-up at most 1.1x. Prints a table and writes probe_accuracy.json to OUT_DIR.

    python benchmarks/probe_accuracy.py OUT_DIR [--rounds 3]    # about a minute on the CPU VM
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

JOB = """
import sys, time
import torch
from torch.utils.data import DataLoader, Dataset

load_s, compute_s, workers, steps = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])

class Samples(Dataset):
    def __len__(self):
        return 1_000_000
    def __getitem__(self, index):
        time.sleep(load_s)
        return torch.ones(16)

loader = DataLoader(Samples(), batch_size=4, num_workers=workers, persistent_workers=workers > 0)
times = []
for n, batch in enumerate(loader):
    times.append(time.perf_counter())
    began = time.perf_counter()
    while time.perf_counter() - began < compute_s:
        pass
    if n == steps:
        break
gaps = sorted(b - a for a, b in zip(times[10:], times[11:]))
print("step_s", gaps[len(gaps) // 2], flush=True)
"""


def _plain_step_s(script: Path, load_s: float, compute_s: float, workers: int, steps: int) -> float:
    done = subprocess.run(
        [sys.executable, str(script), str(load_s), str(compute_s), str(workers), str(steps)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    line = next(line for line in done.stdout.splitlines() if line.startswith("step_s "))
    return float(line.split()[1])


def _probe(script: Path, load_s: float, compute_s: float, steps: int, env: dict[str, str]) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "xfertop", "probe", "--json", "--steps", str(steps), "--warmup", "10", "--",
         sys.executable, str(script), str(load_s), str(compute_s), "0", "100000"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"probe failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
    (rank,) = json.loads(done.stdout.splitlines()[-1])["ranks"]
    return rank


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--load-ms", type=float, default=4.0, help="sleep per sample (4 samples a batch)")
    parser.add_argument("--compute-ms", type=float, default=5.0)
    parser.add_argument("--workers", type=int, default=6, help="the fed job's workers")
    parser.add_argument("--steps", type=int, default=30, help="steps per probe phase")
    args = parser.parse_args()
    load_s, compute_s = args.load_ms / 1000, args.compute_ms / 1000
    work = Path(tempfile.mkdtemp(prefix="xfertop-probe-accuracy-"))
    script = work / "train.py"
    script.write_text(textwrap.dedent(JOB))
    env = {**os.environ, "XFERTOP_DIR": str(work / "rings")}
    rows: dict[str, list[float]] = {"probe_input_free_step_s": [], "fed_step_s": [], "compute_speedup": []}
    for _ in range(args.rounds):
        rows["probe_input_free_step_s"].append(
            _probe(script, load_s, compute_s, args.steps, env)["input_free_step_s"]
        )
        rows["fed_step_s"].append(_plain_step_s(script, load_s, compute_s, args.workers, 10 + 3 * args.steps))
        rows["compute_speedup"].append(_probe(script, 0.0, compute_s, args.steps, env)["speedup_input_free"])
    probe_s, fed_s = statistics.median(rows["probe_input_free_step_s"]), statistics.median(rows["fed_step_s"])
    ratio = fed_s / probe_s  # samples/s ratio: probe's input-free over the fed job's
    compute = statistics.median(rows["compute_speedup"])
    result = {
        "args": vars(args) | {"out_dir": str(args.out_dir)},
        "rounds": rows,
        "probe_input_free_samples_per_s": 4 / probe_s,
        "fed_samples_per_s": 4 / fed_s,
        "probe_over_fed": ratio,
        "starved_within_20_percent": abs(ratio - 1) <= 0.2,
        "compute_bound_speedup": compute,
        "compute_bound_at_most_1_1": compute <= 1.1,
    }
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "probe_accuracy.json").write_text(json.dumps(result, indent=2))
    print(f"starved job, probe's input-free: {4 / probe_s:8.1f} samples/s (median of {args.rounds})")
    print(f"the same job fed ({args.workers} workers): {4 / fed_s:8.1f} samples/s")
    print(f"probe / fed: {ratio:.3f} ({'within' if result['starved_within_20_percent'] else 'OUTSIDE'} 20%)")
    print(f"compute-bound job, input-free speed-up: {compute:.3f}x ({'<=' if compute <= 1.1 else '>'} 1.1)")
    return 0 if result["starved_within_20_percent"] and result["compute_bound_at_most_1_1"] else 1


if __name__ == "__main__":
    sys.exit(main())
