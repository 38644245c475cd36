"""`xfertop compare BEFORE.json AFTER.json`: two end-of-run summaries of `xfertop run` side by side
(launch/compare.py, docs/summary.md). Exit codes: 0 compared, 2 a file that cannot be compared (one line
on stderr)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

EXIT_OK = 0
EXIT_CANNOT_COMPARE = 2


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="two end-of-run summaries side by side: before and after a fix",
        description="Put two summaries that `xfertop run` wrote (under <ring directory>/summaries/) side by "
        "side: samples/s, the mean step, each part of the host's step, the GPU's measured idle, the last "
        "verdicts, and the change in each.",
    )
    parser.add_argument("before", metavar="BEFORE", help="a run summary (JSON), e.g. before a fix")
    parser.add_argument("after", metavar="AFTER", help="another run summary, e.g. after it")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from xfertop.launch.compare import CompareError, as_json, read_summary, render_text

    try:
        before, after = read_summary(args.before), read_summary(args.after)
    except CompareError as exc:
        print(f"xfertop compare: {exc}", file=sys.stderr)
        return EXIT_CANNOT_COMPARE
    if args.json:
        print(json.dumps(as_json(args.before, args.after, before, after), indent=2))
    else:
        sys.stdout.write(render_text(args.before, args.after, before, after))
    return EXIT_OK
