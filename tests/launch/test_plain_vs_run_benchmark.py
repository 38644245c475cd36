"""benchmarks/plain_vs_run.py compares what the job did, not only its speed: every run's exit code and
printed lines, plain and under `xfertop run`, are kept and said to agree or not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _pairs(tmp_path: Path, job: str) -> dict:
    script = tmp_path / "job.py"
    script.write_text(job)
    out = tmp_path / "pairs.json"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "plain_vs_run.py"),
            "--pairs",
            "2",
            "--json",
            str(out),
            "--",
            sys.executable,
            str(script),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


def test_a_job_that_xfertop_leaves_alone_reads_the_same_in_every_run(tmp_path: Path) -> None:
    result = _pairs(
        tmp_path,
        "import sys\nprint('loss=0.25')\nprint('result samples_per_s=100')\nsys.exit(3)\n",
    )
    assert result["exit_codes"] == [3] and result["same_exit_code"]
    assert result["same_output"], result["outputs"]
    (only,) = result["outputs"]
    assert only["stdout"] == ["loss=0.25"]  # the rate's line is left out: it may differ
    assert sorted(only["runs"]) == ["plain 1", "plain 2", "run 1", "run 2"]


def test_a_job_that_prints_otherwise_under_xfertop_is_told_apart(tmp_path: Path) -> None:
    # `xfertop run` marks its child's environment; a job that prints it differs between the modes.
    result = _pairs(
        tmp_path,
        "import os\nprint('watched', os.environ.get('XFERTOP_RUN'))\nprint('samples_per_s=1')\n",
    )
    assert result["same_exit_code"] and result["exit_codes"] == [0]
    assert not result["same_output"]
    by_runs = {tuple(sorted(group["runs"])): group["stdout"] for group in result["outputs"]}
    assert by_runs == {("plain 1", "plain 2"): ["watched None"], ("run 1", "run 2"): ["watched 1"]}
