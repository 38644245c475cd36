"""Dispatch: `xfertop [--interval S] [--once [--json]]` and subcommands. Each subcommand module exposes
``register(subparsers)`` which adds its parser with ``set_defaults(run=callable(args) -> int)``.

Expected failures print one line "xfertop: ..." and return a non-zero code, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import NoReturn

from xfertop import startup_trace
from xfertop.cli import attach, bench, compare, demo, export, probe, record, replay, run
from xfertop.cli.version import VersionAction
from xfertop.cli.viewer import ViewerError
from xfertop.sources.gpu.source import PCIE_CHOICES

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class _OneLineErrorParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (no usage block), like every other xfertop error.
    Subcommand parsers inherit it (add_subparsers uses the parent's class)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineErrorParser(
        prog="xfertop",
        description="Live monitor for PyTorch input pipelines: DataLoader wait, host-to-device copies, "
        "GPU idle gaps and PCIe throughput per GPU and per training rank.",
        epilog="Start with `xfertop demo`. Keys in the live view: q quit, p pause, +/- refresh, t topology, "
        "s py-spy stacks of a process, ? help.",
    )
    parser.add_argument("--version", action=VersionAction)
    parser.add_argument(
        "--interval",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="refresh period in seconds (default 1.0; + and - change it live)",
    )
    parser.add_argument("--once", action="store_true", help="print one snapshot and exit")
    parser.add_argument("--json", action="store_true", help="with --once: JSON (schema xfertop.snapshot/1)")
    parser.add_argument(
        "--pcie",
        choices=PCIE_CHOICES,
        default="auto",
        help="how PCIe throughput is measured: auto (default) uses GPM on Hopper or newer "
        "GPUs, else the byte counters; counters polls the byte counters on every GPU "
        "(~22 reads/s at Gen5 x16: more CPU)",
    )
    parser.add_argument(
        "--prometheus",
        metavar="URL",
        default=None,
        help="show the jobs of every node Prometheus scrapes (`xfertop export` on each), "
        "read from Prometheus at URL, e.g. http://localhost:9090; GPU panes stay local",
    )
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND", dest="command_name")
    for module in (demo, run, probe, bench, attach, export, record, replay, compare):
        module.register(subparsers)
    return parser


def _viewer(args: argparse.Namespace) -> int:
    from xfertop.cli.viewer import build_sources, check_interval, require_terminal, run_tui

    if args.json and not args.once:
        raise ViewerError("--json goes with --once: `xfertop --once --json`")
    interval_s = check_interval(args.interval)  # --once too: a bad value is refused wherever it is given
    if args.once:
        from xfertop.cli.once import run_once

        return run_once(as_json=args.json, pcie=args.pcie, prometheus_url=args.prometheus)
    require_terminal()
    startup_trace.mark("cli: viewer imported, terminal checked")
    sources = build_sources(interval_s, pcie=args.pcie, prometheus_url=args.prometheus)
    startup_trace.mark("cli: sources built (nothing started)")
    return run_tui(sources, interval_s)


def main(argv: list[str] | None = None) -> int:
    startup_trace.mark("cli: xfertop.cli imported, main() starts")
    args = build_parser().parse_args(argv)
    command = getattr(args, "run", None)
    try:
        code = command(args) if command is not None else _viewer(args)
        if sys.stdout is not None:
            sys.stdout.flush()  # a write error surfaces here, not as "Exception ignored" at exit
        return code
    except ViewerError as exc:
        # Named by its command, as the commands' own lines are ("xfertop replay: /x: no such file").
        name = getattr(args, "command_name", None)
        print(f"{'xfertop ' + name if name else 'xfertop'}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # `xfertop --once --json | head`: the reader left; nothing more to say.
        _discard_stdout()
        return EXIT_OK
    except OSError as exc:
        # Output to a full disk, a dead terminal ...: one line, and no second failure at exit.
        _discard_stdout()
        print(f"xfertop: {exc}", file=sys.stderr)
        return EXIT_FAILED


def _discard_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush of unwritten output cannot fail."""
    with contextlib.suppress(OSError, AttributeError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
