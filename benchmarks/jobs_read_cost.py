"""CPU time per JobsSource.sample() call, this checkout against others, on the same ring directory.

    python benchmarks/jobs_read_cost.py [--tree /tmp/src_base] [--samples 120] [--rate-hz 4]
                                        [--dead 10] [--live 2] [--steps-per-s 50]

Fills a private ring directory the way a box looks after a day of use: ``--dead`` rings of training
processes that ran with the real reporter (``xfertop.watch``) and are gone (half exited cleanly, half
were killed), and ``--live`` real reporter processes still stepping at ``--steps-per-s``. Then it runs
one reader process per checkout (this one, plus each ``--tree``), all at the same time on the same
directory, each importing xfertop from its own ``src``; each calls ``JobsSource.sample()``
``--samples`` times at ``--rate-hz`` (taking turns within each period) and measures every call with
``time.thread_time()`` (user + system CPU of the calling thread, so the kernel's work for stat, /proc
and directory reads counts). Readers never remove rings here (the grace period is a day). Prints mean /
median / p90 CPU per sample side by side, the ratio against the first ``--tree``, and whether every
checkout reported the same ranks (pid, status, ring, dead ranks' steps) and problems.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ab_trees import Result, print_agreement, print_costs, print_ratios, run_in_trees

HERE = Path(__file__).resolve().parents[1]

# Runs in a subprocess with PYTHONPATH=<tree>/src and this folder (run_in_trees). argv: ring dir, samples,
# rate, and the monotonic time of the first sample (the readers take turns within each period).
READER = r"""
import json, sys, time
import xfertop
from ab_trees import timed_calls
from xfertop.sources.jobs.source import JobsSource
ring_dir, samples, rate, first_at = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
source = JobsSource(ring_dir=ring_dir, finished_grace_s=86400.0)
time.sleep(max(0.0, first_at - time.monotonic()))
source.sample()  # opens and validates every ring: not counted
costs = []
for cost, state in timed_calls(source.sample, samples, rate, first_at):
    costs.append(cost)

def shape(rank):
    dead = rank.status == "finished"
    return {"pid": rank.pid, "status": rank.status, "ring": rank.ring_path, "device": rank.device,
            "steps": [list(map(str, (s.step, s.wall_ms, s.data_wait_ms, s.copy_gpu_ms))) for s in rank.steps]
            if dead else len(rank.steps) > 0}

ranks = sorted((shape(r) for job in state.jobs for r in job.ranks), key=lambda r: r["ring"])
print(json.dumps({"module": xfertop.__file__, "costs": costs, "ranks": ranks,
                  "problems": list(state.problems)}))
"""

# A training process with the real reporter. argv: steps per second, steps (0: until killed).
WRITER = r"""
import itertools, sys, time
import xfertop
period_s, steps = 1.0 / float(sys.argv[1]), int(sys.argv[2])
print("started", flush=True)
for _ in xfertop.watch(range(steps) if steps else itertools.count()):
    time.sleep(period_s)
"""


def start_writer(ring_dir: str, steps_per_s: float, steps: int) -> subprocess.Popen[str]:
    env = dict(os.environ, XFERTOP_DIR=ring_dir, PYTHONPATH=str(HERE / "src"))
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(steps_per_s), str(steps)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )


def ring_count(ring_dir: str) -> int:
    return sum(name.endswith(".ring") for name in os.listdir(ring_dir))


def wait_for_rings(ring_dir: str, count: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while ring_count(ring_dir) < count:
        if time.monotonic() > deadline:
            raise SystemExit(f"jobs_read_cost: {count} rings not written in {ring_dir} within {timeout_s} s")
        time.sleep(0.05)


def make_dead_rings(ring_dir: str, count: int) -> None:
    """``count`` rings of reporter processes that are gone: even ones ran 300 steps and exited, odd ones
    were killed after their first steps."""
    for index in range(count):
        writer = start_writer(ring_dir, 1000.0, 300 if index % 2 == 0 else 0)
        assert writer.stdout is not None
        writer.stdout.readline()
        if index % 2:
            wait_for_rings(ring_dir, index + 1, 30.0)
            time.sleep(0.2)  # a few hundred steps
            writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=60)


def without_steps(result: Result) -> dict[str, Any]:
    """The ranks (their steps left out: too long to print) and problems a reader reported."""
    ranks = [{k: v for k, v in rank.items() if k != "steps"} for rank in result["ranks"]]
    return {"ranks": ranks, "problems": result["problems"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        type=Path,
        help="another checkout to compare (e.g. a `git worktree add /tmp/src_base HEAD`)",
    )
    parser.add_argument("--samples", type=int, default=120)
    parser.add_argument("--rate-hz", type=float, default=4.0)
    parser.add_argument("--dead", type=int, default=10, help="rings of processes that are gone")
    parser.add_argument("--live", type=int, default=2, help="reporter processes stepping meanwhile")
    parser.add_argument("--steps-per-s", type=float, default=50.0, help="pace of each live process")
    args = parser.parse_args()
    trees = [tree.resolve() for tree in args.tree] + [HERE]
    with tempfile.TemporaryDirectory(prefix="xfertop-bench-") as ring_dir:
        os.chmod(ring_dir, 0o700)
        make_dead_rings(ring_dir, args.dead)
        live = [start_writer(ring_dir, args.steps_per_s, 0) for _ in range(args.live)]
        try:
            wait_for_rings(ring_dir, args.dead + args.live, 60.0)
            results = run_in_trees(
                "jobs_read_cost",
                READER,
                trees,
                [ring_dir, str(args.samples), str(args.rate_hz)],
                args.rate_hz,
                start_delay_s=3.0,
                role="reader",
            )  # after every reader's imports
        finally:
            for writer in live:
                writer.kill()
                writer.wait(timeout=30)
    print(
        f"{args.dead} dead rings, {args.live} live writers at {args.steps_per_s:g} steps/s; "
        f"{args.samples} samples at {args.rate_hz:g} Hz, all checkouts reading meanwhile, taking turns"
    )
    print("CPU per sample (time.thread_time), ms")
    print_costs(trees, results)
    print_ratios(trees, results, reference=0)
    same = print_agreement(
        trees,
        results,
        "ranks (pids, statuses, rings, dead ranks' steps) and problems",
        lambda result: (result["ranks"], result["problems"]),
        shown=without_steps,
    )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
