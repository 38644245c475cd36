"""`xfertop bench [CASES]` and `xfertop check`: run the bench child headless, print, save, compare.

Exit codes: 0 pass (warnings included), 1 fail, 2 could not run (with a one-line reason).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from xfertop.bench.cases import CASE_NAMES
from xfertop.bench.client import BenchClient
from xfertop.bench.compare import compare, render_comparison
from xfertop.bench.options import add_run_args, child_argv
from xfertop.bench.protocol import (
    CaseDone,
    Failure,
    Hello,
    Progress,
    ProtocolError,
    RunDone,
    run_from_json,
    run_to_json,
)
from xfertop.bench.report import human_table, records_dir, save_record

EXIT_COULD_NOT_RUN = 2


def register(subparsers: argparse._SubParsersAction) -> None:
    bench = subparsers.add_parser(
        "bench", help="PCIe copy microbenchmarks (pageable vs pinned, sweep, overlap, DataLoader...)"
    )
    bench.add_argument(
        "cases",
        nargs="*",
        metavar="CASE",
        help=f"cases by name or letter a-l (default all): {', '.join(CASE_NAMES)}",
    )
    _add_common(bench)
    bench.set_defaults(run=lambda args: run_bench(args, check=False))
    check = subparsers.add_parser(
        "check",
        help="on-box acceptance: link, pinned bandwidth, error counters; "
        "exit 0 pass, 1 fail, 2 could not run",
    )
    _add_common(check)
    check.set_defaults(run=lambda args: run_bench(args, check=True), cases=[])


def _add_common(parser: argparse.ArgumentParser) -> None:
    add_run_args(parser)
    parser.add_argument("--json", action="store_true", help="print the run as JSON on stdout")
    parser.add_argument("--compare", type=Path, metavar="OLD.json", help="show what changed since that run")
    parser.add_argument(
        "--records",
        type=Path,
        default=None,
        help=f"folder for the JSON + Markdown record (default {records_dir()})",
    )
    parser.add_argument("--no-save", action="store_true", help="do not write a record")


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _load_old(path: Path | None) -> tuple[object | None, str | None]:
    if path is None:
        return None, None
    try:
        return run_from_json(path.read_text()), None
    except (OSError, ValueError, ProtocolError) as exc:
        return None, f"cannot compare with {path}: {exc}"


def run_bench(args: argparse.Namespace, *, check: bool, client: BenchClient | None = None) -> int:
    command = "check" if check else "bench"
    old, old_error = _load_old(args.compare)
    if old_error:
        _say(f"xfertop {command}: {old_error}")
        return EXIT_COULD_NOT_RUN
    client = client or BenchClient(child_argv(args, check=check, cases=list(args.cases)))
    started: set[str] = set()
    try:
        for message in client.messages():
            if isinstance(message, Hello):
                _say(f"xfertop {command}: {message.backend} backend, cases: {', '.join(message.cases)}")
            elif isinstance(message, Progress) and message.case not in started:
                started.add(message.case)
                _say(f"  {message.case}: {message.text}")
            elif isinstance(message, CaseDone):
                result = message.result
                _say(
                    f"  {result.case}: "
                    + (
                        f"skipped, {result.skipped_reason}"
                        if result.skipped_reason
                        else f"done in {result.wall_s:.1f} s"
                    )
                )
    except KeyboardInterrupt:
        client.cancel()
        _say(f"xfertop {command}: cancelled")
        return EXIT_COULD_NOT_RUN
    outcome = client.outcome
    assert outcome is not None
    if isinstance(outcome.final, Failure):
        _say(f"xfertop {command}: {outcome.final.reason}")
        if args.json:
            print(json.dumps({"error": outcome.final.reason, "exit_code": outcome.exit_code}))
        return outcome.exit_code
    return _finish(args, outcome.final, old, command)


def _finish(args: argparse.Namespace, done: RunDone, old: object | None, command: str) -> int:
    run = done.run
    print(run_to_json(run) if args.json else human_table(run))
    if not args.no_save:
        try:
            json_path, md_path = save_record(run, args.records)
            _say(f"xfertop {command}: report saved to {md_path} (and {json_path.name})")
        except OSError as exc:
            _say(f"xfertop {command}: could not save the record ({exc}); results above are complete")
    if old is not None:
        comparison = render_comparison(compare(old, run))  # type: ignore[arg-type]
        if args.json:
            _say(comparison)
        else:
            print("\ncompared with " + str(args.compare) + ":\n" + comparison)
    return run.exit_code
