"""`xfertop attach PID [--once] [--json]`: diagnose a job started without xfertop, with py-spy.

While py-spy samples, NVML is read for the GPU's busy share (where the job is its GPU's only user): the
samples see the host only, and whether its compute is the GPU's rests on it.

Exit codes: 0 sampled, 2 cannot attach (the reason is one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import psutil

from xfertop.analysis.advice import parts_pct
from xfertop.analysis.sampled_verdict import judge_stacks
from xfertop.analysis.stack_classify import CLASS_LABELS
from xfertop.cli.viewer import is_terminal
from xfertop.model.gpu import GpuState
from xfertop.sources.base import PollingSource
from xfertop.sources.gpu.source import GpuSource
from xfertop.sources.stacks.pyspy_runner import DEFAULT_RATE_HZ, DEFAULT_WINDOW_S
from xfertop.sources.stacks.source import StackSampler
from xfertop.sources.stacks.source_lines import line_reader

EXIT_OK = 0
EXIT_CANNOT_ATTACH = 2
ONCE_WINDOW_S = 3
#: How often NVML is read while a window is sampled (its utilisation is an average over up to 1 s).
GPU_READ_INTERVAL_S = 0.5


def gpu_reader() -> GpuSource:
    """NVML's utilisation and process lists for attach: no PCIe measurement (its counter polling would
    cost a thread for figures attach does not show)."""
    return GpuSource(interval_s=GPU_READ_INTERVAL_S, pcie="off", first_window_s=0.0)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "attach",
        help="sample a running training process with py-spy and say where its time goes",
        description="Attach to a PyTorch training process started without xfertop (and the other ranks "
        "of its DDP job), sample its stacks with py-spy and classify where the main thread "
        "spends its time: waiting for data, loading, copying, GPU sync, compute.",
    )
    parser.add_argument("pid", type=int, help="process id of the training script (any rank)")
    parser.add_argument("--once", action="store_true", help="sample one window, print, exit")
    parser.add_argument("--json", action="store_true", help="with --once: print JSON")
    parser.add_argument(
        "--rate",
        type=int,
        default=DEFAULT_RATE_HZ,
        metavar="HZ",
        help=f"samples per second (default {DEFAULT_RATE_HZ})",
    )
    parser.add_argument(
        "--seconds",
        type=int,
        default=None,
        metavar="S",
        help=f"window length (default {DEFAULT_WINDOW_S} live, {ONCE_WINDOW_S} with --once)",
    )
    parser.add_argument(
        "--no-ranks", action="store_true", help="sample only PID, not the other ranks of its DDP job"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    default_s = ONCE_WINDOW_S if args.once else DEFAULT_WINDOW_S
    window_s = default_s if args.seconds is None else args.seconds
    if args.json and not args.once:
        print(
            f"xfertop attach: --json goes with --once: `xfertop attach {args.pid} --once --json`",
            file=sys.stderr,
        )
        return EXIT_CANNOT_ATTACH
    if window_s < 1 or args.rate < 1:
        print("xfertop attach: --seconds and --rate must be at least 1.", file=sys.stderr)
        return EXIT_CANNOT_ATTACH
    sampler = StackSampler(args.pid, rate_hz=args.rate, window_s=window_s, with_ranks=not args.no_ranks)
    problem = sampler.problem()
    if problem is not None:
        print(f"xfertop attach: {problem}", file=sys.stderr)
        return EXIT_CANNOT_ATTACH
    if args.pid == os.getpid() or args.pid in {parent.pid for parent in psutil.Process().parents()}:
        # `xfertop attach $$`: py-spy follows subprocesses, so it would sample xfertop itself.
        print(
            f"xfertop attach: process {args.pid} is a parent of xfertop itself (your shell? init?), so "
            "py-spy would sample xfertop: pass the pid of the training script.",
            file=sys.stderr,
        )
        return EXIT_CANNOT_ATTACH
    if args.once:
        return _once(sampler, as_json=args.json)
    if not (is_terminal(sys.stdin) and is_terminal(sys.stdout)):
        print(
            f"xfertop attach: the live view needs a terminal; for scripts use `xfertop attach {args.pid} "
            "--once --json`",
            file=sys.stderr,
        )
        return EXIT_CANNOT_ATTACH
    from xfertop.ui.attach_screen import AttachApp

    return AttachApp(sampler, gpu_reader()).run() or EXIT_OK


def once_report(
    sampler: StackSampler, gpu: PollingSource[GpuState] | None = None
) -> tuple[dict[str, Any], str | None]:
    """Sample one window of every rank, reading ``gpu`` (started and stopped here) meanwhile; the JSON
    report and the error that stopped it (if any)."""
    readings: list[GpuState] = []
    if gpu is not None:
        gpu.subscribe(readings.append)
        gpu.start()
    try:
        state = sampler.sample_once()
    finally:
        if gpu is not None:
            gpu.stop()
    summaries, verdict = judge_stacks(state, line_reader, readings)
    report = {
        "pid": sampler.pid,
        "rate_hz": sampler.rate_hz,
        "window_s": sampler.window_s,
        "targets": [
            {
                "pid": t.pid,
                "rank": t.rank,
                "local_rank": t.local_rank,
                "world_size": t.world_size,
                "job_key": t.job_key,
                "command": t.command,
            }
            for t in state.targets
        ],
        "ranks": [summary.to_dict() for summary in summaries],
        "verdict": verdict.to_dict(),
        "error": state.error,
    }
    return report, state.error


def _once(sampler: StackSampler, as_json: bool) -> int:
    report, error = once_report(sampler, gpu_reader())
    if error is not None:
        print(f"xfertop attach: {error}", file=sys.stderr)
        return EXIT_CANNOT_ATTACH
    if as_json:
        print(json.dumps(report, indent=2))
        return EXIT_OK
    verdict = report["verdict"]
    print(verdict["headline"])
    for advice in verdict["advice"]:
        print(f"  - {advice}")
    for rank in report["ranks"]:
        print(_rank_line(rank))
    return EXIT_OK


def _rank_line(rank: dict[str, Any]) -> str:
    """ "pid 4242: the main thread's samples: waiting for data 3%, compute (forward/backward/optimizer) 94%,
    other 3%; workers busy 2 of 2": the sample classes, which add up to 100, in words (the finer shares,
    which overlap them, are in --json). A new user's trial read "main_loading 3%, compute 94%, other 3%,
    loop_host 1%, dispatch 94%, receive 3%": two breakdowns on one line, about 198%, in field names."""
    shown = parts_pct({label: rank.get(f"{cls}_share") or 0.0 for cls, label in CLASS_LABELS.items()})
    shares = ", ".join(f"{label} {share}" for label, share in shown.items() if share != "0%")
    where = f" (the training loop's process: {rank['loop_process']})" if rank.get("loop_process") else ""
    where += f" (the training loop's thread: {rank['loop_thread']})" if rank.get("loop_thread") else ""
    busy = f"workers busy {rank['workers_busy']} of {len(rank['workers'])}"
    return f"pid {rank['pid']}{where}: the main thread's samples: {shares}; {busy}"
