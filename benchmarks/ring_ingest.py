"""Ring ingest: 32 training-like processes write 500 steps/s each; one viewer reads them all at 10 Hz.

Checks that the viewer never sees a torn record (every step's fields obey invariants the writer set up),
never loses a step in the window, and measures the viewer's CPU as a share of one core.

    python benchmarks/ring_ingest.py OUT_DIR                 # 60 s, 32 writers
    python benchmarks/ring_ingest.py OUT_DIR --seconds 5     # a quick look

Writers use the real reporter (``xfertop.watch``) on a paced loop; each batch has a ``shape`` whose first
dimension is ``step % 1000 + 1``, so the ``samples`` field identifies the step, and consecutive steps tile
time exactly (``start[n + 1] == start[n] + wall[n]``): a torn or mixed-up record breaks one of them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from xfertop.model.jobs import JobsState, StepRecord
from xfertop.sources.jobs.source import JobsSource

WRITER = """
import sys, time
import xfertop

class Batch:
    def __init__(self, step):
        self.shape = (step % 1000 + 1,)

def paced(steps_per_s, seconds):
    period_ns = int(1e9 / steps_per_s)
    start = time.monotonic_ns()
    step = 0
    while time.monotonic_ns() - start < seconds * 1e9:
        deadline = start + step * period_ns
        delay = deadline - time.monotonic_ns()
        if delay > 0:
            time.sleep(delay / 1e9)
        yield Batch(step)
        step += 1

count = 0
for _ in xfertop.watch(paced(float(sys.argv[1]), float(sys.argv[2]))):
    count += 1
print(count, flush=True)
"""


class MeasuredJobsSource(JobsSource):
    """JobsSource that keeps the CPU time (of its own thread) and wall time of every sample."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.cpu_s = 0.0
        self.sample_wall_s: list[float] = []

    def sample(self) -> JobsState:
        cpu_before, wall_before = time.thread_time(), time.perf_counter()
        state = super().sample()
        self.cpu_s += time.thread_time() - cpu_before
        self.sample_wall_s.append(time.perf_counter() - wall_before)
        return state


class Checker:
    """Follows every rank's steps across snapshots: contiguity, invariants, nothing lost."""

    def __init__(self) -> None:
        self.last: dict[int, StepRecord] = {}
        self.torn = 0
        self.gaps = 0
        self.checked = 0
        self.lock = threading.Lock()

    def __call__(self, state: JobsState) -> None:
        with self.lock:
            for job in state.jobs:
                for rank in job.ranks:
                    self._follow(rank.pid, rank.steps)

    def _follow(self, pid: int, steps: tuple[StepRecord, ...]) -> None:
        previous = self.last.get(pid)
        for record in steps:
            if previous is not None and record.step <= previous.step:
                continue
            self.checked += 1
            if record.samples != record.step % 1000 + 1 or not 0 <= record.data_wait_ms <= record.wall_ms:
                self.torn += 1
            if previous is None:
                if record.step != 0:
                    self.gaps += record.step
            elif record.step != previous.step + 1:
                self.gaps += record.step - previous.step - 1
            elif record.start_monotonic_ns != previous.start_monotonic_ns + round(previous.wall_ms * 1e6):
                self.torn += 1
            previous = record
        if previous is not None:
            self.last[pid] = previous


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--writers", type=int, default=32)
    parser.add_argument("--steps-per-s", type=float, default=500.0)
    args = parser.parse_args()
    ring_dir = Path(tempfile.mkdtemp(prefix="xfertop-ingest-"))
    env = {**os.environ, "XFERTOP_DIR": str(ring_dir)}
    source = MeasuredJobsSource(interval_s=0.1, ring_dir=str(ring_dir))
    checker = Checker()
    source.subscribe(checker)
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(args.steps_per_s), str(args.seconds)],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(args.writers)
    ]
    source.start()
    wall_before = time.perf_counter()
    written = [int((w.communicate()[0] or "0").strip() or 0) for w in writers]
    source.stop()
    wall_s = time.perf_counter() - wall_before
    checker(source.sample_once())  # the last steps, after every writer finished
    lost_in_ring = sum(
        rank.steps_lost for job in (source.latest() or JobsState(0, (), "")).jobs for rank in job.ranks
    )
    seen = sum(record.step + 1 for record in checker.last.values())
    result = {
        "benchmark": "ring_ingest",
        "machine": {"host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version()},
        "seconds": args.seconds,
        "writers": args.writers,
        "target_steps_per_s": args.steps_per_s,
        "steps_written": sum(written),
        "achieved_steps_per_s_per_writer": sum(written) / args.writers / args.seconds,
        "steps_seen": seen,
        "steps_checked": checker.checked,
        "torn_records": checker.torn,
        "lost_steps": checker.gaps + (sum(written) - seen),
        "ring_steps_lost": lost_in_ring,
        "viewer_cpu_share_of_one_core": source.cpu_s / wall_s,
        "viewer_sample_ms_p50": 1000 * statistics.median(source.sample_wall_s),
        "viewer_sample_ms_max": 1000 * max(source.sample_wall_s),
        "viewer_samples": len(source.sample_wall_s),
    }
    source.close()
    shutil.rmtree(ring_dir, ignore_errors=True)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "ring_ingest.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    print(
        f"torn records: {result['torn_records']}, lost steps: {result['lost_steps']}, viewer CPU: "
        f"{100 * result['viewer_cpu_share_of_one_core']:.1f}% of one core "
        f"(p50 sample {result['viewer_sample_ms_p50']:.1f} ms)"
    )
    ok = result["torn_records"] == 0 and result["lost_steps"] == 0 and result["steps_written"] == seen
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
