"""`xfertop demo`: start the embedded demo job (starved, then fixed) and watch it in the TUI.

Works with no GPU: the demo job then runs on the CPU and the GPU area says there is no driver.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import re
import sys
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo", help="start a small demo training job (starved, then fixed) and watch it live"
    )
    parser.add_argument(
        "--phase-seconds",
        type=float,
        default=15.0,
        help="seconds the demo spends starved before it is fixed (default 15)",
    )
    parser.add_argument("--device", default="auto", help="cpu, cuda or auto (default auto)")
    parser.set_defaults(run=run)


def demo_starting_text(pid: int) -> str:
    """What the jobs pane says until the demo job's first step: it is there, only not stepping yet."""
    return (
        f"the demo job (pid {pid}) is starting: it imports torch and builds its model (a few seconds, "
        "more on a GPU); its steps and verdict appear here from its first step."
    )


def run(args: argparse.Namespace) -> int:
    from xfertop.cli.viewer import ViewerError, build_sources, check_interval, require_terminal, run_tui
    from xfertop.launch.demo import start_demo_job

    if not (math.isfinite(args.phase_seconds) and args.phase_seconds > 0):
        raise ViewerError(f"--phase-seconds must be a positive number of seconds (got {args.phase_seconds})")
    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", args.device):
        raise ViewerError(f"--device must be auto, cpu, cuda or cuda:N (got {args.device!r})")
    interval_s = check_interval(args.interval)
    require_terminal()
    try:
        job = start_demo_job(phase_seconds=args.phase_seconds, device=args.device)
    except OSError as exc:
        raise ViewerError(f"could not start the demo job: {exc}") from exc
    try:
        sources = build_sources(interval_s, ring_dir=str(job.ring_dir), pcie=args.pcie)
        code = run_tui(
            sources, interval_s, no_jobs_text=demo_starting_text(job.process.pid), note=job.phase_text
        )
    finally:
        status = job.stop()
    with contextlib.suppress(OSError):  # the terminal may be gone (hang-up): nothing to tell
        print(
            f"xfertop: demo job stopped (exit status {status}); its output is in {job.log_path}",
            file=sys.stderr,
        )
    return code
