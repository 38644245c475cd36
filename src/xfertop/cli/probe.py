"""`xfertop probe [--steps N | --seconds S] [--warmup N] [--json] [--continue] -- CMD`: what a fix would
buy, measured on the unchanged script (launch/probe.py, docs/probe.md)."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "probe",
        help="measure what freeing the input (and the copies) would buy, on the unchanged script",
        description="Start the command as `xfertop run` does; after --warmup steps measure --steps steps "
        "(or --seconds) as the job is, then with its DataLoader replaying batches it already produced "
        "(input free), then with those batches in pinned memory, then already on the device (copies free "
        "too); then stop the job (SIGINT, then "
        "SIGTERM) and print what each would buy. A diagnosis run: the job trains on repeated batches.",
    )
    parser.add_argument("--steps", type=int, default=40, help="steps measured in each phase (default 40)")
    parser.add_argument(
        "--seconds",
        type=float,
        default=None,
        metavar="S",
        help="measure each phase for S seconds (at least 5 steps) instead of --steps steps",
    )
    parser.add_argument("--warmup", type=int, default=20, help="steps left alone first (default 20)")
    parser.add_argument(
        "--grace",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="how long the job has to end after the probe's SIGINT before SIGTERM (default 10)",
    )
    parser.add_argument(
        "--json", action="store_true", help="end stdout with one line of JSON instead of the report"
    )
    parser.add_argument(
        "--continue",
        dest="keep_going",
        action="store_true",
        help="let the job run on after the probe, on its own batches again",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD", help="the training command")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from xfertop.launch.probe import run_probe

    seconds = args.seconds
    if seconds is not None and not seconds > 0:
        seconds = -1.0  # refused by run_probe with the other bad values, in one line
    return run_probe(
        list(args.command), args.steps, args.warmup, args.keep_going, args.json, args.grace, seconds or 0.0
    )
