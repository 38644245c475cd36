"""CPU cost of the live view: xfertop (and nvitop, if installed) in a 160x48 pseudo-terminal.

Each tool runs --seconds at each refresh rate (1 Hz and 4 Hz by default); CPU is the time the scheduler ran
the process's threads over the measured span (after --warmup; /proc/PID/task/*/schedstat, to the
nanosecond), in % of one core, counting all its threads (xfertop's PCIe counter poller included: it runs
whenever NVML answers). The kernel's user+system ticks are kept beside it (``cpu_percent_in_ticks``): at
1 Hz a 20 s run is 15-25 of them, one tick ~0.06 of the ratio. The terminal output is drained the whole time,
as a real terminal would. Optionally a load command (e.g. the demo job) runs for the whole benchmark so
both tools have a busy GPU and a job to show.

    python benchmarks/tui_cpu.py --seconds 45 --out benchmarks/results \
        --load "python -m xfertop.launch.demo_job --phase-seconds 600 --device cuda"

With ``--before TREE`` (a checkout of an older commit, e.g. ``git worktree add /tmp/xt_before OLD``) an
"xfertop-before" row runs that tree's xfertop (``PYTHONPATH=TREE/src``) beside this one and nvitop, each rate
in turn, in the same run. With ``--together`` a rate's tools run at once, each in its own terminal, over the
same seconds: a machine whose speed drifts between runs (an H100 box's did by 15% within minutes, session 37)
then weighs on every tool alike, and none measures the load's start-up alone (in turn, the first tool did:
``--load-age S`` also starts the load S seconds ahead). ``--repeat N`` measures each rate N times. With
``--floor``, two bare Textual apps of benchmarks/textual_floor.py (one clock row; xfertop's panes with the
rows it changes each period) run beside them too: what any Textual app of the view's shape pays, the floor
under xfertop's figure.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pty_run import PtyProcess


def cpu_seconds(process: psutil.Process) -> float:
    """User + system CPU of every thread so far, in the kernel's 10 ms ticks (USER_HZ 100): at 1 Hz a 20 s
    run of either tool is 15-25 ticks, so one tick moves a ratio by ~0.06."""
    times = process.cpu_times()
    return times.user + times.system


def scheduled_seconds(pid: int) -> float | None:
    """The time the scheduler ran every thread of ``pid`` so far, to the nanosecond
    (/proc/PID/task/*/schedstat; None where Linux does not keep it). A thread that ends takes its count
    with it: both tools' threads live as long as they do."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as stat:
                total += int(stat.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1e9 if total else None


def measure(
    argv: list[str],
    seconds: float,
    warmup_s: float,
    columns: int,
    rows: int,
    env: dict[str, str] | None = None,
) -> dict:
    """One tool's CPU over ``seconds`` after ``warmup_s``."""
    tui = PtyProcess(argv, columns=columns, rows=rows, env=env)
    try:
        tui.read_for(warmup_s)
        if tui.process.poll() is not None:
            return {"argv": argv, "error": f"exited during warm-up with {tui.process.returncode}"}
        process = psutil.Process(tui.pid)
        ran_before = scheduled_seconds(tui.pid)
        written_before = len(tui.output)
        cpu_before, wall_before = cpu_seconds(process), time.perf_counter()
        tui.read_for(seconds)
        cpu_after, wall_after = cpu_seconds(process), time.perf_counter()
        written = len(tui.output) - written_before
        ran_after = scheduled_seconds(tui.pid)
        tui.send(b"q")
        tui.wait(10.0)
        wall = wall_after - wall_before
        ticks_percent = 100.0 * (cpu_after - cpu_before) / wall
        scheduled = None
        if ran_before is not None and ran_after is not None:
            scheduled = 100.0 * (ran_after - ran_before) / wall
        return {
            "argv": argv,
            # The scheduler's nanoseconds where Linux keeps them, else the 10 ms ticks.
            "cpu_percent_of_one_core": ticks_percent if scheduled is None else scheduled,
            "cpu_percent_in_ticks": ticks_percent,
            "seconds": wall,
            # Written over the measured seconds, as the CPU is; the first full paint and the warm-up's
            # output count in the total only.
            "output_bytes": written,
            "output_bytes_total": len(tui.output),
        }
    finally:
        tui.close()


def gpu_context() -> dict:
    """What xfertop sees on this box (GPUs and how PCIe is measured), recorded next to the figures."""
    result = subprocess.run(
        [sys.executable, "-m", "xfertop", "--once", "--json"], capture_output=True, text=True, timeout=120
    )
    if result.returncode != 0:
        return {"error": result.stderr.strip()}
    document = json.loads(result.stdout)
    return {
        "gpus": [f"{gpu['name']} pcie={gpu['pcie']['method']}" for gpu in document["gpus"]],
        "driver_error": document["driver"]["error"],
    }


def commands(
    interval_s: float, include_nvitop: bool, xfertop_args: str = "", floor: bool = False
) -> dict[str, list[str]]:
    found = {
        "xfertop": [
            sys.executable,
            "-m",
            "xfertop",
            "--interval",
            str(interval_s),
            *shlex.split(xfertop_args),
        ]
    }
    nvitop = shutil.which("nvitop")
    if include_nvitop and nvitop:
        found["nvitop"] = [nvitop, "--interval", str(interval_s)]
    if floor:
        script = str(Path(__file__).resolve().parent / "textual_floor.py")
        for shape in ("clock", "panes"):
            found[f"textual-floor-{shape}"] = [sys.executable, script, shape, "--interval", str(interval_s)]
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="measured seconds per tool and rate")
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--rates-hz", default="1,4", help="refresh rates, comma separated")
    parser.add_argument("--size", default="160x48", help="terminal COLUMNSxROWS")
    parser.add_argument("--no-nvitop", action="store_true")
    parser.add_argument("--load", help="a command to run in the background for the whole benchmark")
    parser.add_argument("--xfertop-args", default="", help="more xfertop options, e.g. '--pcie counters'")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--before", type=Path, help="an older tree whose xfertop runs beside this one")
    parser.add_argument("--floor", action="store_true", help="also the bare Textual apps of textual_floor.py")
    parser.add_argument(
        "--together",
        action="store_true",
        help="run a rate's tools at once, each in its own terminal, over the same seconds (not in turn)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="measure each rate this many times")
    parser.add_argument(
        "--load-age",
        type=float,
        default=0.0,
        help="seconds the load runs before the first tool starts (its start-up out of every window)",
    )
    args = parser.parse_args()
    columns, rows = (int(part) for part in args.size.split("x"))
    load = (
        subprocess.Popen(
            shlex.split(args.load),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
        )
        if args.load
        else None
    )
    if load is not None:
        time.sleep(args.load_age)
    results: list[dict] = []
    context = gpu_context()
    print(f"GPUs: {context.get('gpus') or context}")
    try:
        rates = [float(rate) for rate in args.rates_hz.split(",")]
        for rate_hz in [rate for rate in rates for _ in range(args.repeat)]:
            row: dict = {"rate_hz": rate_hz}
            found = commands(1.0 / rate_hz, not args.no_nvitop, args.xfertop_args, args.floor)
            runs = [(name, argv, None) for name, argv in found.items()]
            if args.before is not None:
                # The older tree's src first, this tree's taken out; the rest (installed wheels) kept.
                here = str(Path(__file__).resolve().parents[1] / "src")
                kept = [
                    p
                    for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                    if p and Path(p).resolve() != Path(here)
                ]
                path = os.pathsep.join([str(args.before.resolve() / "src"), *kept])
                before_env = {**os.environ, "PYTHONPATH": path}
                runs.insert(1, ("xfertop-before", runs[0][1], before_env))
            if args.together:
                # Every tool at once, each in its own thread and terminal: the same seconds of the machine.
                with concurrent.futures.ThreadPoolExecutor(len(runs)) as pool:
                    started = {
                        name: pool.submit(measure, argv, args.seconds, args.warmup, columns, rows, env)
                        for name, argv, env in runs
                    }
                    row.update((name, future.result()) for name, future in started.items())
            for name, argv, env in runs:
                if not args.together:
                    row[name] = measure(argv, args.seconds, args.warmup, columns, rows, env)
                figure = row[name].get("cpu_percent_of_one_core", row[name].get("error"))
                print(f"{rate_hz:g} Hz  {name:8s} CPU % of one core: {figure}")
            mine = row["xfertop"].get("cpu_percent_of_one_core")
            older = row.get("xfertop-before", {}).get("cpu_percent_of_one_core")
            if mine is not None and older:
                row["ratio_xfertop_over_before"] = mine / older
                print(f"{rate_hz:g} Hz  xfertop / xfertop-before CPU: {mine / older:.2f}")
            theirs = row.get("nvitop", {}).get("cpu_percent_of_one_core")
            if mine is not None and theirs:
                row["ratio_xfertop_over_nvitop"] = mine / theirs
                print(f"{rate_hz:g} Hz  xfertop / nvitop CPU: {mine / theirs:.2f}")
                for name in ("textual-floor-clock", "textual-floor-panes"):
                    floor = row.get(name, {}).get("cpu_percent_of_one_core")
                    if floor is not None:
                        row[f"ratio_{name}_over_nvitop"] = floor / theirs
                        print(f"{rate_hz:g} Hz  {name} / nvitop CPU: {floor / theirs:.2f}")
            results.append(row)
    finally:
        if load is not None:
            load.terminate()
            load.wait(10)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"tui_cpu-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(
        json.dumps(
            {
                "size": args.size,
                "seconds": args.seconds,
                "load": args.load,
                "xfertop_args": args.xfertop_args,
                "before": str(args.before) if args.before else None,
                "context": context,
                "cpu_count": psutil.cpu_count(),
                "results": results,
            },
            indent=2,
        )
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
