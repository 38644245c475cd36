"""The command line: `xfertop` and its subcommands. One module per subcommand; main.py dispatches."""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    from xfertop.cli.main import main as _main

    return _main(argv)
