"""The architecture is a contract: import directions are written in pyproject.toml and checked here."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold() -> None:
    lint_imports = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    result = subprocess.run(
        [lint_imports, "--config", str(ROOT / "pyproject.toml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: " in result.stdout and " broken" in result.stdout


def test_viewer_import_does_not_pull_torch() -> None:
    """The viewer must reach a first frame fast: importing xfertop (and its reporter) never imports torch."""
    code = "import sys, xfertop, xfertop.reporter; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def _modules_importing(top_name: str) -> set[str]:
    import ast

    found = set()
    src = ROOT / "src"
    for path in src.rglob("*.py"):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            if any(name.split(".")[0] == top_name for name in names):
                found.add(".".join(path.relative_to(src).with_suffix("").parts))
    return found


def test_only_the_nvml_boundary_imports_pynvml() -> None:
    """NVML is the hardware boundary: one module talks to it, so one fake replaces it in tests."""
    assert _modules_importing("pynvml") <= {"xfertop.sources.gpu.nvml_api"}
