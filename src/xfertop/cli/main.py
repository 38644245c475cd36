"""Dispatch: `xfertop [--once --json]` and subcommands. Each subcommand module exposes
``register(subparsers)`` which adds its parser with ``set_defaults(run=callable(args) -> int)``."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    print("xfertop: not built yet", file=sys.stderr)
    return 2
