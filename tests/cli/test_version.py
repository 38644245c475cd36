"""`xfertop --version` names the installed distribution's version."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys


def test_version_prints_the_installed_version() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "xfertop", "--version"], capture_output=True, text=True, timeout=60
    )
    assert (result.returncode, result.stdout, result.stderr) == (
        0,
        f"xfertop {importlib.metadata.version('xfertop')}\n",
        "",
    )
