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
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ab_trees import print_agreement, print_costs, print_ratios, run_in_trees

HERE = Path(__file__).resolve().parents[1]

# Runs in a subprocess with PYTHONPATH=<tree>/src and this folder (run_in_trees). argv: the fake's tests
# dir, pids (comma-separated), GPUs, samples, rate, pcie method, and the monotonic time of the first sample.
SAMPLER = r"""
import dataclasses, json, sys, time
from types import SimpleNamespace
sys.path.insert(0, sys.argv[1])
from fakes.fake_pynvml import FakePynvml, RecordedTraffic
import xfertop
from ab_trees import timed_calls
from xfertop.sources.gpu.source import GpuSource
from xfertop.sources.gpu.nvml_api import NvmlApi
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
for cost, state in timed_calls(source.sample, samples, rate, first_at):
    costs.append(cost)
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        type=Path,
        help="another checkout to compare (e.g. a `git worktree add /tmp/gpu_base HEAD`)",
    )
    parser.add_argument("--samples", type=int, default=120)
    parser.add_argument("--rate-hz", type=float, default=4.0)
    parser.add_argument("--gpus", type=int, default=1)
    parser.add_argument(
        "--processes", type=int, default=3, help="compute processes per GPU: this one plus N-1 idle children"
    )
    parser.add_argument("--pcie", default="auto", choices=("auto", "counters"))
    args = parser.parse_args()
    trees = [tree.resolve() for tree in args.tree] + [HERE]
    children = start_processes(max(0, args.processes - 1))
    try:
        pids = [os.getpid(), *(child.pid for child in children)]
        sampler_args = [
            str(HERE / "tests"),
            ",".join(map(str, pids)),
            str(args.gpus),
            str(args.samples),
            str(args.rate_hz),
            args.pcie,
        ]
        results = run_in_trees(
            "gpu_sample_cost", SAMPLER, trees, sampler_args, args.rate_hz, start_delay_s=5.0
        )  # after every sampler's imports and setup
    finally:
        for child in children:
            child.kill()
            child.wait()
    print(
        f"{args.gpus} fake H200(s), {len(pids)} processes each (pids {pids}); pcie {args.pcie}; "
        f"{args.samples} samples at {args.rate_hz:g} Hz, all checkouts sampling meanwhile, taking turns"
    )
    print("CPU per GpuSource.sample() (time.thread_time), ms")
    print_costs(trees, results)
    print_ratios(trees, results, reference=-1)
    same = print_agreement(
        trees,
        results,
        "GPUs, links, errors, clocks and processes (pids, users, commands)",
        lambda result: result["gpus"],
    )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
