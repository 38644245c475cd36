"""Memory of the real jobs source under job churn: 1,000 short jobs come and go, then none is left.

    python benchmarks/jobs_churn_memory.py [--tree /tmp/src_base] [--jobs 1000] [--job-every-s 0.18]
                                           [--steps 1024] [--at-once 4] [--grace-s 60]

Each job is a real process that ends (a ``sleep`` killed when its turn is over); its ring is written by the
real ``RingWriter`` under that process's pid and start time, ``--steps`` steps ending "now". One job starts
every ``--job-every-s`` seconds of a simulated clock (the source's ``monotonic``; heartbeats follow it), at
most ``--at-once`` run together, and ``JobsSource.sample()`` is called once per job, as a live view reading
at ~5 Hz would. The default is the churn of the report: ~1,000 short jobs in 3 minutes, 60 s of grace.
After the last job the clock moves past the grace period, so every ring is removed and forgotten.

Runs once per checkout (this one, plus each ``--tree``, e.g. ``git archive HEAD src | tar -x -C /tmp/b``),
one after the other, each in a fresh process importing xfertop from its own ``src``. Prints, per checkout:
RSS after the first sample, the peak (VmHWM), RSS and live Python blocks once no ring is left, the most
ranks one sample showed, and the most descriptors the process held.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

CHURN = r"""
import dataclasses, gc, json, os, subprocess, sys, time
import xfertop
from xfertop import wire
from xfertop.reporter._identity import current_identity
from xfertop.reporter._ring_writer import RingWriter
from xfertop.sources.jobs.source import JobsSource

ring_dir, jobs, every_s, steps, at_once, grace_s = (
    sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]))

def status_mb(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return -1.0

clock = [time.monotonic()]
source = JobsSource(ring_dir=ring_dir, finished_grace_s=grace_s, monotonic=lambda: clock[0])
source.sample()
gc.collect()
before = {"rss_mb": status_mb("VmRSS"), "blocks": sys.getallocatedblocks()}
running = []
most_ranks = most_fds = 0
for index in range(jobs):
    clock[0] += every_s
    child = subprocess.Popen(["sleep", "3600"])
    identity = dataclasses.replace(current_identity(), pid=child.pid, ppid=os.getpid(),
                                   start_ticks=wire.process_start_ticks(child.pid), run_id=f"sweep-{index}",
                                   argv=("python", "trial.py", f"--trial={index}"))
    writer = RingWriter(ring_dir, identity)
    first_ns = int(clock[0] * 1e9) - steps * 1_000_000
    for step in range(steps):
        writer.write_step(step, first_ns + step * 1_000_000, 1_000_000, 200_000, 50_000, 1 << 20, 32,
                          wire.F_COPIED | wire.F_PINNED)
    running.append((child, writer))
    if len(running) > at_once:  # the oldest job ends
        ended, ended_writer = running.pop(0)
        ended_writer.close()
        ended.kill()
        ended.wait()
        ended_writer.words.release()
        ended_writer._map.close()
        os.close(ended_writer._fd)
    state = source.sample()
    most_ranks = max(most_ranks, sum(len(job.ranks) for job in state.jobs))
    most_fds = max(most_fds, len(os.listdir("/proc/self/fd")))
for child, writer in running:
    writer.close()
    child.kill()
    child.wait()
    writer.words.release()
    writer._map.close()
    os.close(writer._fd)
for _ in range(3):  # past the grace period: every ring is removed, then forgotten
    clock[0] += grace_s + 10
    state = source.sample()
gc.collect()
after = {"rss_mb": status_mb("VmRSS"), "blocks": sys.getallocatedblocks()}
print(json.dumps({"module": xfertop.__file__, "before": before, "after": after, "peak_mb": status_mb("VmHWM"),
                  "most_ranks": most_ranks, "most_fds": most_fds, "rings_left": len(os.listdir(ring_dir)),
                  "ranks_left": sum(len(job.ranks) for job in state.jobs)}))
"""


def run_tree(tree: Path, args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory(prefix="xfertop-churn-") as ring_dir:
        os.chmod(ring_dir, 0o700)
        out = subprocess.run(
            [
                sys.executable,
                "-c",
                CHURN,
                ring_dir,
                str(args.jobs),
                str(args.job_every_s),
                str(args.steps),
                str(args.at_once),
                str(args.grace_s),
            ],
            env=dict(os.environ, PYTHONPATH=str(tree / "src")),
            capture_output=True,
            text=True,
            check=False,
        )
    if out.returncode != 0:
        raise SystemExit(f"jobs_churn_memory: the churn for {tree} failed:\n{out.stderr}")
    result = json.loads(out.stdout)
    if not result["module"].startswith(str(tree / "src")):
        raise SystemExit(f"jobs_churn_memory: {tree} imported xfertop from {result['module']}")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", default=[], type=Path, help="another checkout to compare")
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--job-every-s", type=float, default=0.18, help="simulated seconds between two jobs")
    parser.add_argument("--steps", type=int, default=1024, help="steps each job wrote")
    parser.add_argument("--at-once", type=int, default=4, help="jobs running at the same time")
    parser.add_argument("--grace-s", type=float, default=60.0)
    args = parser.parse_args()
    trees = [tree.resolve() for tree in args.tree] + [HERE]
    print(
        f"{args.jobs} jobs of {args.steps} steps, one every {args.job_every_s:g} s (simulated), "
        f"{args.at_once} at once, {args.grace_s:g} s grace; one sample per job"
    )
    print(
        f"{'checkout':40} {'RSS before':>10} {'peak':>8} {'RSS after':>10} {'blocks before':>13} "
        f"{'blocks after':>12} {'most ranks':>10} {'most fds':>8} {'rings left':>10}"
    )
    for tree in trees:
        result = run_tree(tree, args)
        before, after = result["before"], result["after"]
        print(
            f"{tree!s:40} {before['rss_mb']:8.1f}MB {result['peak_mb']:6.1f}MB {after['rss_mb']:8.1f}MB "
            f"{before['blocks']:13} {after['blocks']:12} {result['most_ranks']:10} {result['most_fds']:8} "
            f"{result['rings_left']:10}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
