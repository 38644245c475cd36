"""Run `xfertop demo` in a pseudo-terminal through both of its phases and write what a person would read.

    python benchmarks/demo_screens.py OUT_DIR [--columns 160 --rows 48 --phase-seconds 15 --seconds 45]

Every few seconds the screen (decoded with pyte, as a terminal would draw it) is written to
OUT_DIR/demo_<columns>x<rows>.txt with its time; at the end the demo is quit with `q`, and the script
prints whether the demo job lived through both phases (its log is copied beside the screens), whether
a job row appeared and how long it took, and the exit status. Exit code 1 when the job died.
Needs pyte (a pure-Python terminal emulator), which xfertop does not depend on.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

import pyte

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pty_run import PtyProcess


def screen_text(screen: pyte.Screen) -> str:
    return "\n".join(line.rstrip() for line in screen.display)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--columns", type=int, default=160)
    parser.add_argument("--rows", type=int, default=48)
    parser.add_argument("--phase-seconds", type=float, default=15.0)
    parser.add_argument("--seconds", type=float, default=45.0, help="how long to watch before quitting")
    parser.add_argument("--every", type=float, default=5.0, help="seconds between screens written")
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    log_dir = args.out_dir / f"tmp_{args.columns}x{args.rows}"  # the demo job's log lands in its TMPDIR
    log_dir.mkdir(exist_ok=True)
    env = dict(os.environ, TMPDIR=str(log_dir))
    screen = pyte.Screen(args.columns, args.rows)
    stream = pyte.ByteStream(screen)
    demo = PtyProcess(
        [sys.executable, "-m", "xfertop", "demo", "--phase-seconds", str(args.phase_seconds)],
        columns=args.columns,
        rows=args.rows,
        env=env,
    )
    screens: list[str] = []
    first_job_s = None
    fed = 0
    started = time.perf_counter()
    next_shot = started + args.every
    try:
        while (now := time.perf_counter()) - started < args.seconds:
            demo.read_for(0.2)
            stream.feed(bytes(demo.output[fed:]))
            fed = len(demo.output)
            text = screen_text(screen)
            if (
                first_job_s is None
                and re.search(r"demo_job|xfertop\.launch\.demo", text)
                and "no training jobs" not in text
            ):
                first_job_s = now - started
            if now >= next_shot:
                screens.append(f"--- t={now - started:.1f} s ---\n{text}")
                next_shot += args.every
            if demo.process.poll() is not None:
                break
        demo.send(b"q")
        status = demo.wait(20)
        stream.feed(bytes(demo.output[fed:]))
    finally:
        demo.close()
    screens.append(f"--- after q: exit status {status} ---\n{screen_text(screen)}")
    name = f"demo_{args.columns}x{args.rows}.txt"
    (args.out_dir / name).write_text("\n\n".join(screens) + "\n")
    tail = "\n".join(demo.output.decode("utf-8", "replace").splitlines()[-3:])
    job_log = "".join(p.read_text(errors="replace") for p in sorted(log_dir.glob("xfertop-demo-*.log")))
    job_died = bool(re.search(r"exited unexpectedly|killed by signal|terminate called|Traceback", job_log))
    both_phases = "phase 2" in job_log
    print(
        f"{name}: first job row after {first_job_s if first_job_s is None else round(first_job_s, 1)} s; "
        f"both phases: {both_phases}; job died: {job_died}; viewer exit status {status}"
    )
    print("last output:", tail[-300:].replace("\x1b", "^["))
    if job_log:
        (args.out_dir / f"demo_job_{args.columns}x{args.rows}.log").write_text(job_log)
    return 1 if job_died or not both_phases else 0


if __name__ == "__main__":
    sys.exit(main())
