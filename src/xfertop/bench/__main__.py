"""The bench child: `python -m xfertop.bench [--check] [CASES] ...` streams protocol lines on stdout.

It owns the CUDA context; the viewer and the CLI only read its stdout. Its exit code is the run's:
0 pass, 1 fail, 2 could not run (the last line is then a `failure` message with the reason).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import TextIO

from xfertop.bench.cases import CASE_NAMES, resolve_cases
from xfertop.bench.options import add_run_args, thresholds_from
from xfertop.bench.protocol import Failure, Message, encode
from xfertop.bench.runner import EXIT_COULD_NOT_RUN, RunOptions, run


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m xfertop.bench", description=__doc__)
    parser.add_argument("cases", nargs="*", help=f"case names or letters a-l: {', '.join(CASE_NAMES)}")
    parser.add_argument("--check", action="store_true", help="the acceptance subset, judged")
    parser.add_argument("--cpu-corrupt", action="store_true", help=argparse.SUPPRESS)
    add_run_args(parser)
    return parser


def _emitter(out: TextIO) -> Callable[[Message], None]:
    def emit(message: Message) -> None:
        out.write(encode(message) + "\n")
        out.flush()

    return emit


def main(argv: list[str] | None = None) -> int:
    # The protocol owns the real stdout; anything else printed (libraries, warnings) goes to stderr.
    # Native code writing to fd 1 (CUDA, forked DataLoader workers) lands on stderr too.
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    emit = _emitter(protocol_out)
    args = _parser().parse_args(argv)
    try:
        cases = resolve_cases(args.cases, check=args.check)
        options = RunOptions(
            backend=args.backend,
            check=args.check,
            cases=cases,
            gpu_index=args.gpu,
            samples=args.samples,
            copy_bytes=args.size,
            sweep_bytes=args.sizes,
            thresholds=thresholds_from(args),
            cpu_corrupt=args.cpu_corrupt,
        )
    except (KeyError, ValueError) as exc:
        emit(Failure(str(exc).strip("'\""), EXIT_COULD_NOT_RUN))
        return EXIT_COULD_NOT_RUN
    if options.samples is not None and options.samples < 3:
        emit(
            Failure(
                f"--samples {options.samples}: need at least 3 for a median and a spread", EXIT_COULD_NOT_RUN
            )
        )
        return EXIT_COULD_NOT_RUN
    return run(options, emit)


if __name__ == "__main__":
    sys.exit(main())
