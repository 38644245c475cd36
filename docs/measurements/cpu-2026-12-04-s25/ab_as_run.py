"""reporter_overhead.py's ``as_run_<device>_dataloader`` row in two trees, alternating processes (ABAB...).

Each process imports xfertop and the benchmark from its own tree and prints the added ns a step of the
watched loop with copy timing on (as `xfertop run` times a step) beside ``plain`` in the same rounds.

    python docs/measurements/cpu-2026-12-04-s25/ab_as_run.py --before /tmp/base_tree [--pairs 4] [--device cuda]

(``git worktree add /tmp/base_tree <commit>`` makes the tree before a change.)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[3]

CHILD = r"""
import json, os, sys, tempfile
sys.path.insert(0, os.path.join(sys.argv[1], "benchmarks"))
os.environ["XFERTOP_DIR"] = tempfile.mkdtemp(prefix="xfertop-ab-")
import torch
import reporter_overhead as ro
import xfertop
assert xfertop.__file__.startswith(sys.argv[1]), xfertop.__file__
torch.set_num_threads(1)
result = ro.side_by_side(ro.as_run_loops(torch.device(sys.argv[2]), torch.ones(8, 64), True), 5000, 5)
row = result["watch+copy timing (as run)"]
print(json.dumps({"plain": result["plain_ns_per_step"], "added": row["added_ns_per_step"]}))
"""


def run(tree: Path, device: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(tree), device], capture_output=True, text=True, check=True, env=env
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--device", default="cpu", help="cpu, or cuda: the as_run_cuda_dataloader row")
    args = parser.parse_args()
    trees = {"before": args.before.resolve(), "after": HERE}
    added: dict[str, list[float]] = {"before": [], "after": []}
    for pair in range(args.pairs):
        order = ("before", "after") if pair % 2 == 0 else ("after", "before")
        for name in order:
            figures = run(trees[name], args.device)
            added[name].append(figures["added"])
            plain_us, added_us = figures["plain"] / 1000, figures["added"] / 1000
            print(f"pair {pair} {name:6} plain {plain_us:6.1f} us  added {added_us:+6.1f} us", flush=True)
    before, after = statistics.median(added["before"]), statistics.median(added["after"])
    print(f"median added: before {before / 1000:+.1f} us, after {after / 1000:+.1f} us", end="")
    print(f", after / before {after / before:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
