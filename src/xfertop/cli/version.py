"""`xfertop --version`: the installed distribution's version (importlib.metadata), looked up only when asked
(start-up of every other command does not pay for reading the package metadata)."""

from __future__ import annotations

import argparse
import importlib.metadata
from collections.abc import Sequence
from typing import Any


def installed_version() -> str:
    """The version pip (or pipx) installed; the source tree's own where xfertop runs uninstalled."""
    try:
        return importlib.metadata.version("xfertop")
    except importlib.metadata.PackageNotFoundError:
        import xfertop

        return f"{xfertop.__version__} (not installed: run from a source tree)"


class VersionAction(argparse.Action):
    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(
            option_strings,
            dest,
            nargs=0,
            default=argparse.SUPPRESS,
            help="print the installed version and exit",
            **kwargs,
        )

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        print(f"xfertop {installed_version()}")  # on stdout, as argparse's own version action prints it
        parser.exit(0)
