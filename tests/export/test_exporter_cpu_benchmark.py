"""benchmarks/exporter_cpu.py runs on a CPU-only machine: xfertop's exporter measured, nvitop's measured
or skipped with its reason, JSON written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_benchmark_measures_xfertop_and_says_why_nvitop_is_skipped(tmp_path: Path) -> None:
    out = tmp_path / "cpu.json"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "exporter_cpu.py"),
            "--seconds",
            "2",
            "--scrape",
            "1",
            "--no-job",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    results = {result["exporter"]: result for result in json.loads(out.read_text())["results"]}
    xfertop = results["xfertop"]
    assert xfertop["scrapes"] >= 1 and xfertop["cpu_s"] >= 0 and xfertop["exposition_bytes"] > 1000
    nvitop = results["nvitop"]
    assert "cpu_s" in nvitop or nvitop["skipped"], nvitop
    assert "xfertop  scrape every    1 s:" in done.stdout
