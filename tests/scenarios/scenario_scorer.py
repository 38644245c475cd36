"""benchmarks/score_scenarios.py loaded as a module (it is a script, not part of the package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _load_scorer() -> Any:
    path = ROOT / "benchmarks" / "score_scenarios.py"
    spec = importlib.util.spec_from_file_location("score_scenarios", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("score_scenarios", module)
    spec.loader.exec_module(module)
    return module


scorer = _load_scorer()
