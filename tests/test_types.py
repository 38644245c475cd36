"""Static checks over the source: mypy (configured in pyproject.toml's [tool.mypy]) and ruff.

mypy catches what tests miss: a method that shadows a base class's with another signature (an
``App._flush(self)`` over Textual's ``App._flush(self, stderr=False)`` broke every print in the viewer).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Outside the tree, kept between runs: a warm cache checks only the modules that changed.
MYPY_CACHE = Path(tempfile.gettempdir()) / "xfertop-mypy-cache"


def test_mypy_passes() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(MYPY_CACHE),
            "--no-color-output",
            "--no-error-summary",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_check_passes() -> None:
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    result = subprocess.run(
        [ruff, "check", "--no-cache", "--quiet", "."], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_tree_is_formatted() -> None:
    """`ruff format` over the tree is the house style (pyproject pins the formatter's minor release)."""
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    result = subprocess.run(
        [ruff, "format", "--check", "--no-cache", "--quiet", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, "run `ruff format .`:\n" + result.stdout + result.stderr
