"""Main-thread CPU of the live view on a box without a GPU: the real app, only NVML faked.

xfertop runs in a 160x48 pseudo-terminal exactly as `xfertop --interval S` would, except that a launcher
(``python -c``) first installs the recorded-H200 fake (tests/fakes/fake_pynvml.py, one GPU replaying the
recorded PCIe traffic) as ``sys.modules["pynvml"]``: the GPU source, its PCIe poller, the host and jobs
sources and the Textual app are all the real ones. With ``--load`` (e.g. the CPU demo job) the jobs pane
has a ring to show, and the load's pid is listed as a process on the fake GPU so the process table
shows it too. Output is drained all the time, as a real terminal would.

CPU is read per thread from /proc (psutil) over ``--seconds`` after ``--warmup``; the main thread
(Textual's event loop: messages, layout, rendering, the terminal writes) is the figure of interest, the
other threads are the sources. With ``--before PATH`` (a ``git worktree add /tmp/ui_base HEAD`` made
before a change) the two trees alternate (ABBA per round), each run as ``PYTHONPATH=<tree>/src``, and
the medians and their ratio are printed per refresh rate. Keep the rest of the baseline tree equal to
this one (e.g. ``git worktree add /tmp/ui_base HEAD && git -C /tmp/ui_base checkout OLD -- src/xfertop/ui``):
a source changed meanwhile changes the main thread's work too (messages per second). Thread times
tick in 10 ms steps: at 1 Hz measure 30 s or more per run.

    python benchmarks/tui_cpu_fake_gpu.py --seconds 20 --rounds 3 --before /tmp/ui_base \
        --load "python -m xfertop.launch.demo_job --phase-seconds 600"

``--py-spy DIR`` also records the main thread's stacks of each "after" run (raw collapsed format).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from pty_run import PtyProcess  # noqa: E402

#: Runs before the CLI: the fake NVML takes the place of the pynvml module (imported lazily by
#: xfertop.sources.gpu.nvml_api), then xfertop's own main runs the TUI.
LAUNCHER = """
import os, sys
from types import SimpleNamespace
sys.path.insert(0, os.environ["XFERTOP_FAKE_TESTS_DIR"])
from fakes.fake_pynvml import FakeGpu, FakePynvml, RecordedTraffic
pids = [int(p) for p in os.environ.get("XFERTOP_FAKE_GPU_PIDS", "").split(",") if p]
gpu = FakeGpu(0, traffic=RecordedTraffic(),
              processes=[SimpleNamespace(pid=pid, usedGpuMemory=3 * 10**9) for pid in pids])
sys.modules["pynvml"] = FakePynvml([gpu])
from xfertop.cli import main
sys.exit(main(sys.argv[1:]))
"""


def thread_cpu(pid: int) -> dict[int, float]:
    return {t.id: t.user_time + t.system_time for t in psutil.Process(pid).threads()}


def measure(
    tree: Path,
    rate_hz: float,
    seconds: float,
    warmup_s: float,
    size: tuple[int, int],
    env: dict[str, str],
    py_spy_out: Path | None = None,
) -> dict:
    """One run of ``tree``'s xfertop: main-thread and whole-process CPU in % of one core."""
    argv = [sys.executable, "-c", LAUNCHER, "--interval", str(1.0 / rate_hz)]
    run_env = {**env, "PYTHONPATH": str(tree.resolve() / "src")}
    tui = PtyProcess(argv, columns=size[0], rows=size[1], env=run_env)
    spy = None
    try:
        tui.read_for(warmup_s)
        if tui.process.poll() is not None:
            tail = bytes(tui.output[-2000:]).decode(errors="replace")
            return {"error": f"exited during warm-up with {tui.process.returncode}: {tail}"}
        before, started = thread_cpu(tui.pid), time.perf_counter()
        written_before = len(tui.output)
        if py_spy_out is not None:
            spy = subprocess.Popen(
                [
                    shutil.which("py-spy") or "py-spy",
                    "record",
                    "--pid",
                    str(tui.pid),
                    "--duration",
                    str(int(seconds)),
                    "--rate",
                    "200",
                    "--format",
                    "raw",
                    "--threads",
                    "--nonblocking",
                    "-o",
                    str(py_spy_out),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        tui.read_for(seconds)
        after, wall = thread_cpu(tui.pid), time.perf_counter() - started
        written = len(tui.output) - written_before
        if spy is not None:
            while spy.poll() is None:
                tui.read_for(0.2)
        names = thread_names(tui.pid)
        tui.send(b"q")
        tui.wait(10.0)
    finally:
        if spy is not None and spy.poll() is None:
            spy.kill()
        tui.close()
    per_thread = {tid: 100.0 * (cpu - before.get(tid, 0.0)) / wall for tid, cpu in after.items()}
    main_thread = per_thread.get(tui.pid, 0.0)
    total = sum(per_thread.values())
    threads = {
        names.get(tid, f"tid {tid}"): round(cpu, 3)
        for tid, cpu in sorted(per_thread.items(), key=lambda item: -item[1])
        if cpu > 0
    }
    return {
        "main": main_thread,
        "total": total,
        "others": total - main_thread,
        "seconds": wall,
        "kb_written": written / 1000,
        "threads": threads,
    }


def thread_names(pid: int) -> dict[int, str]:
    """OS thread id -> Python thread name, from ``py-spy dump`` (empty where py-spy cannot attach)."""
    try:
        argv = [shutil.which("py-spy") or "py-spy", "dump", "--pid", str(pid), "--nonblocking"]
        dump = subprocess.run(argv, capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return {int(tid): name for tid, name in re.findall(r'^Thread (\d+) \([a-z-]+\): "([^"]*)"', dump, re.M)}


def start_load(command: str, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        shlex.split(command),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        env=env,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="measured seconds per run")
    parser.add_argument("--warmup", type=float, default=4.0)
    parser.add_argument("--rates-hz", default="1,4", help="refresh rates, comma separated")
    parser.add_argument("--size", default="160x48", help="terminal COLUMNSxROWS")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="runs per tree and rate (with --before: before/after alternate, ABBA)",
    )
    parser.add_argument("--before", type=Path, help="a checkout of the baseline to compare against")
    parser.add_argument("--after", type=Path, default=REPO, help="the tree under test (default: this one)")
    parser.add_argument("--load", help="a command run in the background meanwhile (e.g. the demo job)")
    parser.add_argument(
        "--load-age",
        type=float,
        default=3.0,
        help="seconds the load runs before the first run (its step strip is young for ~2 minutes)",
    )
    parser.add_argument("--py-spy", type=Path, metavar="DIR", help="record py-spy stacks of the after runs")
    parser.add_argument("--json", type=Path, help="write every run's figures here")
    args = parser.parse_args()
    size = tuple(int(part) for part in args.size.split("x"))
    ring_dir = tempfile.mkdtemp(prefix="xfertop-cpu-")
    env = {**os.environ, "XFERTOP_DIR": ring_dir, "XFERTOP_FAKE_TESTS_DIR": str(REPO / "tests")}
    load = start_load(args.load, env) if args.load else None
    if load is not None:
        env["XFERTOP_FAKE_GPU_PIDS"] = str(load.pid)
        time.sleep(args.load_age)  # the job registers its ring and starts stepping
    if args.py_spy:
        args.py_spy.mkdir(parents=True, exist_ok=True)
    trees = [("after", args.after)]
    if args.before is not None:
        trees.insert(0, ("before", args.before))
    runs: list[dict] = []
    try:
        for round_index in range(args.rounds):
            for rate_hz in (float(rate) for rate in args.rates_hz.split(",")):
                order = trees if round_index % 2 == 0 else trees[::-1]
                for name, tree in order:
                    spy_out = (
                        args.py_spy / f"{name}-{rate_hz:g}hz-{round_index}.txt"
                        if args.py_spy and name == "after"
                        else None
                    )
                    result = measure(tree, rate_hz, args.seconds, args.warmup, size, env, spy_out)
                    result.update(tree=name, rate_hz=rate_hz, round=round_index)
                    runs.append(result)
                    if "error" in result:
                        print(f"{rate_hz:g} Hz {name:6s}: {result['error']}", flush=True)
                        continue
                    print(
                        f"round {round_index} {rate_hz:g} Hz {name:6s}: main thread {result['main']:5.2f}%"
                        f"  other threads {result['others']:5.2f}%  process {result['total']:5.2f}%"
                        f"  {result['kb_written']:.0f} KB written",
                        flush=True,
                    )
                    threads = result["threads"].items()
                    print("    " + ", ".join(f"{thread} {cpu:.2f}%" for thread, cpu in threads), flush=True)
    finally:
        if load is not None:
            load.terminate()
            load.wait(10)
        shutil.rmtree(ring_dir, ignore_errors=True)
    print("medians (% of one core):")
    for rate_hz in (float(rate) for rate in args.rates_hz.split(",")):
        medians = {}
        for name, _ in trees:
            mine = [
                run
                for run in runs
                if run["tree"] == name and run["rate_hz"] == rate_hz and "error" not in run
            ]
            if mine:
                medians[name] = statistics.median(run["main"] for run in mine)
                total = statistics.median(run["total"] for run in mine)
                print(
                    f"  {rate_hz:g} Hz {name:6s}: main thread {medians[name]:.2f}%, process {total:.2f}%"
                    f" ({len(mine)} runs)"
                )
        if medians.get("before"):
            print(f"  {rate_hz:g} Hz main thread after/before: {medians['after'] / medians['before']:.2f}")
            # The load on a shared box drifts: the ratio within each round (runs next to each other).
            pairs = [
                (run["main"], other["main"])
                for run in runs
                for other in runs
                if run["tree"] == "after"
                and other["tree"] == "before"
                and "error" not in run
                and "error" not in other
                and run["rate_hz"] == other["rate_hz"] == rate_hz
                and run["round"] == other["round"]
                and other["main"] > 0
            ]
            if pairs:
                ratios = [after / before for after, before in pairs]
                print(
                    f"  {rate_hz:g} Hz main thread after/before per round: "
                    f"{', '.join(f'{r:.2f}' for r in ratios)}; median {statistics.median(ratios):.2f}"
                )
    if args.json:
        args.json.write_text(
            json.dumps(
                {"size": args.size, "seconds": args.seconds, "load": args.load, "runs": runs}, indent=2
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
