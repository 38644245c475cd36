"""The one entry point: `xfertop [--once --json]`, `xfertop run`, `demo`, `bench`, `check`, `attach`."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    raise SystemExit("xfertop: not built yet")


if __name__ == "__main__":
    sys.exit(main())
