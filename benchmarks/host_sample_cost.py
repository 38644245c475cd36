"""CPU time per HostSource.sample() call, this checkout against others, on the same running training job.

    python benchmarks/host_sample_cost.py [--tree /tmp/host_base] [--samples 60] [--rate-hz 4]
                                          [--control-device auto|nvidiactl|PATH] [--load "CMD"]
                                          [--extra-processes N]

Starts the demo training job (``python -m xfertop.launch.demo_job --phase-seconds 2``: after 2 s it
switches to DataLoader workers, which are the children the host source must find), waits until the job
has registered its ring and started its workers, and learns the pids to watch the way the viewer does
(``interesting_pids`` over the jobs source; no GPU source here). Then it runs one sampler process per
checkout (this one, plus each ``--tree``), all at the same time against the same job, each importing
xfertop from its own ``src``; each calls ``HostSource.sample()`` ``--samples`` times at ``--rate-hz``
and measures every call with ``time.thread_time()`` (user + system CPU of the calling thread, so the
kernel's work in /proc reads counts). Prints mean / median / p90 CPU per sample, side by side, the
ratio against the first ``--tree``, and whether every checkout saw the same process tree.

``--control-device``: the mapping that marks a CUDA process (whose smaps the source reads every 5 s).
``auto`` uses /dev/nvidiactl where it exists, else a shared library the job maps (libtorch_cpu.so when
torch is installed), so the smaps path is exercised on a machine without a GPU too; ``nvidiactl`` keeps
/dev/nvidiactl (on a GPU-less machine: no smaps reads at all).

``--extra-processes N`` starts N idle processes (``sleep``) for the run: a container sees few processes,
while a server lists hundreds in /proc (kernel threads included), and the older host source read the
stat of every one of them on each sample.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ab_trees import Column, Result, costs_ms, print_agreement, print_costs, print_ratios, run_in_trees

HERE = Path(__file__).resolve().parents[1]

# Runs in a subprocess with PYTHONPATH=<tree>/src and this folder (run_in_trees). argv: pids
# (comma-separated), samples, rate, device, and the monotonic time of the first sample: the samplers take
# turns within each period, so that no two read the same smaps at the same moment (the kernel's locks would
# make both pay for it).
SAMPLER = r"""
import json, sys, time
import xfertop
from ab_trees import timed_calls
from xfertop.sources.host.source import HostSource
pids = [int(p) for p in sys.argv[1].split(",")]
samples, rate, device, first_at = int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], float(sys.argv[5])
source = HostSource(interval_s=1.0 / rate, nvidia_control_device=device)
source.watch_pids(pids)
time.sleep(max(0.0, first_at - time.monotonic()))
source.sample()  # the first sample has no CPU interval yet; not counted
costs, smaps = [], []
for cost, state in timed_calls(source.sample, samples, rate, first_at):
    costs.append(cost)
    # A figure of age 0 was read from smaps in this very sample.
    smaps.append(any(p.cuda_host_alloc_age_s == 0.0 for p in state.processes))

def shape(p):
    return {"pid": p.pid, "name": p.name, "user": p.user, "ppid": p.ppid, "error": p.error,
            "cuda_host_alloc": p.cuda_host_alloc_bytes, "children": [shape(c) for c in p.children]}

print(json.dumps({"module": xfertop.__file__, "costs": costs, "smaps": smaps,
                  "tree": [shape(p) for p in state.processes]}))
"""


def start_load(command: str, ring_dir: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, XFERTOP_DIR=ring_dir)
    return subprocess.Popen(
        shlex.split(command),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def wait_for_job(ring_dir: str, timeout_s: float) -> list[int]:
    """The pids the viewer would watch, once the job has registered and has workers."""
    import psutil

    from xfertop.sources.bundle import interesting_pids
    from xfertop.sources.jobs.source import JobsSource

    class NoGpu:
        def latest(self) -> None:
            return None

    jobs = JobsSource(ring_dir=ring_dir)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        jobs.sample_once()
        pids = sorted(interesting_pids(NoGpu(), jobs))  # type: ignore[arg-type]
        try:
            if pids and all(len(psutil.Process(pid).children()) >= 2 for pid in pids):
                return pids
        except psutil.NoSuchProcess:
            pass
        time.sleep(0.5)
    raise SystemExit(f"host_sample_cost: no job with workers registered in {ring_dir} within {timeout_s} s")


def control_device(choice: str, pids: list[int]) -> str:
    if choice == "nvidiactl" or (choice == "auto" and os.path.exists("/dev/nvidiactl")):
        return "/dev/nvidiactl"
    if choice != "auto":
        return choice
    maps = Path(f"/proc/{pids[0]}/maps").read_text()
    libraries = [line.split(maxsplit=5)[5] for line in maps.splitlines() if len(line.split(maxsplit=5)) == 6]
    torch = [path for path in libraries if path.endswith("/libtorch_cpu.so")]
    shared = [path for path in libraries if ".so" in path]
    return (torch or shared or ["/dev/nvidiactl"])[0]


def costs_without_smaps_ms(result: Result) -> list[float]:
    """The CPU of the samples that read no smaps, in ms (a NaN if every sample read some)."""
    plain = [cost for cost, read in zip(costs_ms(result), result["smaps"], strict=True) if not read]
    return plain or [float("nan")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        type=Path,
        help="another checkout to compare (e.g. a `git worktree add /tmp/host_base HEAD`)",
    )
    parser.add_argument("--samples", type=int, default=60)
    parser.add_argument("--rate-hz", type=float, default=4.0)
    parser.add_argument("--control-device", default="auto")
    parser.add_argument("--load", default=f"{sys.executable} -m xfertop.launch.demo_job --phase-seconds 2")
    parser.add_argument("--startup-timeout", type=float, default=120.0)
    parser.add_argument(
        "--extra-processes",
        type=int,
        default=0,
        help="idle processes to start meanwhile, so /proc lists as many as on a server",
    )
    args = parser.parse_args()
    trees = [tree.resolve() for tree in args.tree] + [HERE]
    with tempfile.TemporaryDirectory(prefix="xfertop-bench-") as ring_dir:
        os.chmod(ring_dir, 0o700)
        load = start_load(args.load, ring_dir)
        extra = [subprocess.Popen(["sleep", "3600"]) for _ in range(args.extra_processes)]
        try:
            pids = wait_for_job(ring_dir, args.startup_timeout)
            device = control_device(args.control_device, pids)
            processes = sum(name.isdigit() for name in os.listdir("/proc"))
            sampler_args = [",".join(map(str, pids)), str(args.samples), str(args.rate_hz), device]
            results = run_in_trees(
                "host_sample_cost", SAMPLER, trees, sampler_args, args.rate_hz, start_delay_s=5.0
            )  # after every sampler's imports
        finally:
            os.killpg(load.pid, 15)
            load.wait(timeout=30)
            for process in extra:
                process.kill()
                process.wait()
    workers = sum(len(p["children"]) for p in results[0]["tree"])
    print(
        f"watched pids {pids} with {workers} children; {args.samples} samples at {args.rate_hz:g} Hz, "
        f"all checkouts sampling meanwhile, taking turns; control device {device}; "
        f"{processes} processes in /proc"
    )
    print("CPU per sample (time.thread_time), ms; 'no smaps': the samples that read no smaps")
    print_costs(
        trees,
        results,
        extra_columns=[
            Column("no smaps", 9, lambda result: f"{statistics.mean(costs_without_smaps_ms(result)):.3f}"),
            Column("smaps reads", 11, lambda result: str(sum(result["smaps"]))),
        ],
    )
    print_ratios(trees, results, reference=0)
    same = print_agreement(
        trees,
        results,
        "process tree (pids, names, users, ppids, errors, cudaHostAlloc figures)",
        lambda result: result["tree"],
    )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
