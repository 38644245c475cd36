"""CPU time per GpuSource.sample() call on the recorded-H200 fake NVML, this checkout against others.

    python benchmarks/gpu_sample_cost.py [--tree /tmp/gpu_base] [--samples 120] [--rate-hz 4]
                                         [--gpus 1] [--processes 3] [--pcie auto|counters]

The GPU source is the real one; only NVML is faked (tests/fakes/fake_pynvml.py: recorded H200 answers,
GPM on, the recorded PCIe traffic). Each fake GPU lists ``--processes`` compute processes that are real
pids on this box: this benchmark's own process, a sleeping Python child with a long command line, and
``sleep`` children, so the source's join with the host (/proc, psutil) does its real work. The fake is
this checkout's for every tree, so only the source differs.

One sampler process per checkout (this one, plus each ``--tree``, e.g. a ``git worktree add /tmp/gpu_base
HEAD`` made before a change) runs at the same time, each importing xfertop from its own ``src``; they take
turns within each period. Each calls ``GpuSource.sample()`` ``--samples`` times at ``--rate-hz`` (the
pause between calls leaves the caches as cold as in the app) and measures every call with
``time.thread_time()``: user + system CPU of the calling thread, so the kernel's /proc work counts and
the fake's sleeps do not. The first call (NVML setup) is not counted. Prints mean / median / p90 / max
CPU per sample side by side, the ratio against the first ``--tree``, and whether every checkout
reported the same GPUs and processes (PCIe rates and timestamps aside: they depend on when each read).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

# Runs in a subprocess with PYTHONPATH=<tree>/src. argv: the fake's tests dir, pids (comma-separated),
# GPUs, samples, rate, pcie method, and the monotonic time of the first sample.
SAMPLER = r"""
import dataclasses, json, sys, time
from types import SimpleNamespace
sys.path.insert(0, sys.argv[1])
from fakes.fake_pynvml import FakePynvml, RecordedTraffic
import xfertop
from xfertop.sources.gpu import GpuSource
from xfertop.sources.nvml_api import NvmlApi
pids = [int(p) for p in sys.argv[2].split(",")]
gpus, samples, rate, pcie, first_at = (int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), sys.argv[6],
                                       float(sys.argv[7]))
fake = FakePynvml.h200s(gpus)
for gpu in fake.gpus:
    gpu.traffic = RecordedTraffic()
    gpu.processes = [SimpleNamespace(pid=pid, usedGpuMemory=(i + 1) * 10**9) for i, pid in enumerate(pids)]
source = GpuSource(interval_s=1.0 / rate, api=NvmlApi(fake), first_window_s=0, pcie=pcie)
source.sample()  # NVML setup and the PCIe baseline; not counted
time.sleep(max(0.0, first_at - time.monotonic()))
costs = []
next_at = first_at
for _ in range(samples):
    next_at += 1.0 / rate
    time.sleep(max(0.0, next_at - time.monotonic()))
    before = time.thread_time()
    state = source.sample()
    costs.append(time.thread_time() - before)
source.stop()

def shape(gpu):
    facts = dataclasses.asdict(gpu)
    facts.pop("pcie")
    return facts

print(json.dumps({"module": xfertop.__file__, "costs": costs, "gpus": [shape(g) for g in state.gpus]}))
"""


def start_processes(count: int) -> list[subprocess.Popen[bytes]]:
    """Idle children to list as GPU processes: one Python with a long command line, the rest ``sleep``."""
    python = [sys.executable, "-c", "import time; time.sleep(3600)", "--a-long", "--command-line"]
    return [subprocess.Popen(python if i == 0 else ["sleep", "3600"]) for i in range(count)]


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", default=[], type=Path,
                        help="another checkout to compare (e.g. a `git worktree add /tmp/gpu_base HEAD`)")
    parser.add_argument("--samples", type=int, default=120)
    parser.add_argument("--rate-hz", type=float, default=4.0)
    parser.add_argument("--gpus", type=int, default=1)
    parser.add_argument("--processes", type=int, default=3,
                        help="compute processes per GPU: this one plus N-1 idle children")
    parser.add_argument("--pcie", default="auto", choices=("auto", "counters"))
    args = parser.parse_args()
    trees = [tree.resolve() for tree in args.tree] + [HERE]
    children = start_processes(max(0, args.processes - 1))
    try:
        pids = [os.getpid(), *(child.pid for child in children)]
        start = time.monotonic() + 5.0  # after every sampler's imports and setup
        turn = 1.0 / args.rate_hz / len(trees)
        sampler_args = [str(HERE / "tests"), ",".join(map(str, pids)), str(args.gpus), str(args.samples),
                        str(args.rate_hz), args.pcie]
        samplers = [subprocess.Popen(
            [sys.executable, "-c", SAMPLER, *sampler_args, str(start + i * turn)],
            env=dict(os.environ, PYTHONPATH=str(tree / "src")), stdout=subprocess.PIPE, text=True)
            for i, tree in enumerate(trees)]
        results = []
        for tree, sampler in zip(trees, samplers, strict=True):
            out, _ = sampler.communicate()
            if sampler.returncode != 0:
                raise SystemExit(f"gpu_sample_cost: the sampler for {tree} failed")
            result = json.loads(out)
            if not result["module"].startswith(str(tree / "src")):
                raise SystemExit(f"gpu_sample_cost: {tree} imported xfertop from {result['module']}")
            results.append(result)
    finally:
        for child in children:
            child.kill()
            child.wait()
    print(f"{args.gpus} fake H200(s), {len(pids)} processes each (pids {pids}); pcie {args.pcie}; "
          f"{args.samples} samples at {args.rate_hz:g} Hz, all checkouts sampling meanwhile, taking turns")
    print("CPU per GpuSource.sample() (time.thread_time), ms")
    print(f"{'checkout':32s} {'mean':>8s} {'median':>8s} {'p90':>8s} {'max':>8s}")
    for tree, result in zip(trees, results, strict=True):
        costs = [c * 1e3 for c in result["costs"]]
        print(f"{tree!s:32s} {statistics.mean(costs):8.3f} {statistics.median(costs):8.3f} "
              f"{percentile(costs, 0.9):8.3f} {max(costs):8.3f}")
    for tree, result in zip(trees[:-1], results[:-1], strict=True):
        ratios = [statistics.mean(results[-1]["costs"]) / statistics.mean(result["costs"]),
                  statistics.median(results[-1]["costs"]) / statistics.median(result["costs"])]
        print(f"{trees[-1]} / {tree}: mean {ratios[0]:.2f}x, median {ratios[1]:.2f}x")
    same = all(result["gpus"] == results[0]["gpus"] for result in results)
    print("same GPUs, links, errors, clocks and processes (pids, users, commands) in every checkout:",
          "yes" if same else "NO")
    if not same:
        for tree, result in zip(trees, results, strict=True):
            print(tree, json.dumps(result["gpus"]))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
