"""Where the live view's CPU goes: xfertop in a 160x48 pseudo-terminal, per thread and per function.

    python benchmarks/tui_profile.py OUT_DIR [--rate-hz 1] [--seconds 20] [--load "COMMAND"]

Prints the exact CPU time per thread (from /proc) and, from py-spy's on-CPU samples (no --idle), the
top functions by self time and the top xfertop/textual frames by inclusive time; writes the raw
collapsed stacks to OUT_DIR/tui_profile-<rate>hz.txt.
"""

from __future__ import annotations

import argparse
import collections
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pty_run import PtyProcess


def thread_cpu(pid: int) -> dict[int, float]:
    return {t.id: t.user_time + t.system_time for t in psutil.Process(pid).threads()}


def thread_table(before: dict[int, float], after: dict[int, float], seconds: float, raw: str) -> str:
    """Exact CPU per OS thread (from /proc), named by the py-spy stacks ("thread (TID): name")."""
    names = {int(tid): name for tid, name in re.findall(r"^thread \((\d+)\): ([^;]+);", raw, re.M)}
    rows = sorted(((after[tid] - before.get(tid, 0.0), tid) for tid in after), reverse=True)
    total = sum(cpu for cpu, _ in rows)
    lines = [f"CPU {100 * total / seconds:.2f}% of one core over {seconds:.1f} s; per thread:"]
    lines += [
        f"  {100 * cpu / seconds:6.2f}%  {names.get(tid, f'tid {tid}')}" for cpu, tid in rows if cpu > 0
    ]
    return "\n".join(lines)


def summarise(raw: str, top: int) -> str:
    threads: collections.Counter[str] = collections.Counter()
    self_time: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        frames = stack.split(";")
        threads[frames[0]] += count
        self_time[frames[-1]] += count
        for frame in set(frames[1:]):
            if "xfertop" in frame or "textual" in frame or "rich" in frame:
                inclusive[frame] += count
    lines = [f"{total} on-CPU samples"]
    lines += [f"  thread {share / total:6.1%}  {name}" for name, share in threads.most_common()]
    lines.append("top self:")
    lines += [f"  {share / total:6.1%}  {name}" for name, share in self_time.most_common(top)]
    lines.append("top inclusive (xfertop/textual/rich frames):")
    lines += [f"  {share / total:6.1%}  {name}" for name, share in inclusive.most_common(top)]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--rate-hz", type=float, default=1.0)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--sample-rate", type=int, default=100, help="py-spy samples per second")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--load", help="a command to run in the background meanwhile (e.g. the demo job)")
    parser.add_argument("--xfertop-args", default="", help="more xfertop options, e.g. '--pcie counters'")
    args = parser.parse_args()
    py_spy = shutil.which("py-spy")
    if py_spy is None:
        print("tui_profile: py-spy is not on PATH", file=sys.stderr)
        return 2
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
    args.out_dir.mkdir(parents=True, exist_ok=True)
    tag = "-".join(shlex.split(args.xfertop_args)).strip("-")
    raw_path = args.out_dir / f"tui_profile-{args.rate_hz:g}hz{'-' + tag if tag else ''}.txt"
    tui = PtyProcess(
        [
            sys.executable,
            "-m",
            "xfertop",
            "--interval",
            str(1.0 / args.rate_hz),
            *shlex.split(args.xfertop_args),
        ]
    )
    try:
        tui.read_for(args.warmup)
        before, started = thread_cpu(tui.pid), time.perf_counter()
        spy = subprocess.Popen(
            [
                py_spy,
                "record",
                "--pid",
                str(tui.pid),
                "--duration",
                str(args.seconds),
                "--rate",
                str(args.sample_rate),
                "--format",
                "raw",
                "--threads",
                "--nonblocking",
                "-o",
                str(raw_path),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        while spy.poll() is None:
            tui.read_for(0.5)
        after, seconds = thread_cpu(tui.pid), time.perf_counter() - started
        if spy.returncode != 0:
            print(f"tui_profile: py-spy failed: {spy.stderr.read().strip()}", file=sys.stderr)
            return 1
        tui.send(b"q")
        tui.wait(10.0)
    finally:
        tui.close()
        if load is not None:
            load.terminate()
            load.wait(10)
    print(f"{args.rate_hz:g} Hz, {args.seconds} s")
    raw = raw_path.read_text()
    print(thread_table(before, after, seconds, raw))
    print(summarise(raw, args.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
