"""`xfertop run [--no-copy-timing] [--no-summary] -- CMD ...`: start a training command instrumented, no
code change."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "run",
        help="start a training command with every DataLoader watched (no code change)",
        description="Start CMD with every DataLoader iteration timed as a step; watch it with `xfertop`. "
        "Output, exit status and signals pass through unchanged.",
    )
    parser.add_argument(
        "--copy-timing",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="time Tensor.to/.cuda calls inside steps, so host-to-device copies are measured "
        "(on by default; a Python wrapper on every .to() call, a few us each: "
        "--no-copy-timing turns it off)",
    )
    parser.add_argument(
        "--summary",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="when the job ends, print where its time went, its verdicts over time and the "
        "advice on stderr, after the job's own output, and keep it as JSON (on by "
        "default: --no-summary turns it off)",
    )
    parser.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        metavar="-- CMD ...",
        help="the training command, e.g. -- python train.py --epochs 3",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from xfertop.launch.run import run_command

    return run_command(list(args.command), copy_timing=args.copy_timing, summary=args.summary)


def main(argv: list[str] | None = None) -> int:
    """`python -m xfertop.cli.run -- CMD ...`, the same as `xfertop run`."""
    parser = argparse.ArgumentParser(prog="xfertop")
    register(parser.add_subparsers())
    args = parser.parse_args(["run", *(sys.argv[1:] if argv is None else argv)])
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
