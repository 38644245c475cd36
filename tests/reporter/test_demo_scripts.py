"""The demo scripts run on CPU and leave a readable ring: they are the first thing people try."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ring_test_tools import child_env, ranks
from xfertop.sources.jobs.source import JobsSource

DEMOS = Path(__file__).resolve().parents[2] / "demos"


def test_single_process_demos_run_on_cpu(tmp_path: Path) -> None:
    names = ("starved_loader", "pageable_copies", "fixed_pipeline")
    children = {
        name: subprocess.Popen(
            [sys.executable, str(DEMOS / f"{name}.py"), "--steps", "4", "--device", "cpu"],
            env=child_env(tmp_path / name),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in names
    }
    for name, child in children.items():
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        assert f"{name}: 4 steps written" in out
        [rank] = ranks(JobsSource(ring_dir=str(tmp_path / name)))
        assert len(rank.steps) == 4 and rank.reporter_errors == 0
