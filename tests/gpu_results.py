"""Where GPU tests leave their measured figures: JSON files under $XFERTOP_RESULTS_DIR, when it is set.

benchmarks/h200_batch.sh sets it; docs/measurements/ keeps the files the docs quote.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from xfertop.model.plain import to_plain


def write_result(name: str, result: object) -> None:
    """Write ``result`` (dicts, lists, dataclasses) as ``<name>.json``; nothing when the variable is unset."""
    results_dir = os.environ.get("XFERTOP_RESULTS_DIR")
    if results_dir:
        Path(results_dir).mkdir(parents=True, exist_ok=True)
        (Path(results_dir) / f"{name}.json").write_text(json.dumps(to_plain(result), indent=2, default=repr))
