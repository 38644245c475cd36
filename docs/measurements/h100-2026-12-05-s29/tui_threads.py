"""Where the live view's CPU goes, by thread: xfertop at 1 Hz (and 4 Hz) in a 160x48 pty beside a load,
each thread's CPU time over the measured span (psutil, from /proc), then a py-spy record of the same
process (--threads, no idle stacks), so a thread's share can be read by what it runs.

    python docs/measurements/h100-2026-12-05-s29/tui_threads.py OUTDIR --seconds 30 \
        --load "python -m xfertop.launch.demo_job --phase-seconds 600 --device cuda"
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
from pty_run import PtyProcess


def thread_times(process: psutil.Process) -> dict[int, float]:
    return {t.id: t.user_time + t.system_time for t in process.threads()}


def thread_name(pid: int, tid: int) -> str:
    try:
        return Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
    except OSError:
        return "?"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rates-hz", default="1,4")
    parser.add_argument("--load")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    load = subprocess.Popen(shlex.split(args.load), stdout=subprocess.DEVNULL) if args.load else None
    report = {}
    try:
        time.sleep(5)
        for rate in (float(r) for r in args.rates_hz.split(",")):
            tui = PtyProcess([sys.executable, "-m", "xfertop", "--interval", str(1 / rate)], 160, 48)
            try:
                tui.read_for(5)
                process = psutil.Process(tui.pid)
                before, began = thread_times(process), time.perf_counter()
                tui.read_for(args.seconds)
                after, wall = thread_times(process), time.perf_counter() - began
                rows = sorted(
                    (
                        {
                            "tid": tid,
                            "name": thread_name(tui.pid, tid),
                            "percent_of_core": round(100 * (cpu - before.get(tid, 0.0)) / wall, 3),
                        }
                        for tid, cpu in after.items()
                    ),
                    key=lambda row: -row["percent_of_core"],
                )
                total = sum(row["percent_of_core"] for row in rows)
                report[f"{rate:g}Hz"] = {"total_percent_of_core": round(total, 3), "threads": rows}
                print(f"{rate:g} Hz: {total:.2f}% of a core")
                for row in rows[:8]:
                    print(f"  {row['tid']:>8} {row['name']:<16} {row['percent_of_core']:.3f}%")
                spy = shutil.which("py-spy")
                if spy:
                    record = subprocess.Popen(
                        [
                            spy,
                            "record",
                            "--pid",
                            str(tui.pid),
                            "--threads",
                            "--rate",
                            "200",
                            "--duration",
                            str(int(args.seconds)),
                            "--format",
                            "raw",
                            "-o",
                            str(args.out / f"spy-{rate:g}hz.txt"),
                        ],
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                    while record.poll() is None:
                        tui.read_for(0.5)
            finally:
                tui.send(b"q")
                tui.wait(10.0)
                tui.close()
    finally:
        if load is not None:
            load.terminate()
            load.wait(10)
    (args.out / "tui_threads.json").write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
