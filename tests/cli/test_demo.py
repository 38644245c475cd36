"""`xfertop demo`: starts the demo job, shows it in the TUI, and stops it when the user quits."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from pty_run import PtyProcess  # noqa: E402 - benchmarks/ is not a package


def test_demo_shows_its_job_and_stops_it_on_quit(tmp_path: Path) -> None:
    import os

    env = {**os.environ, "XFERTOP_DIR": str(tmp_path / "rings")}
    tui = PtyProcess(
        [sys.executable, "-m", "xfertop", "demo", "--phase-seconds", "3", "--device", "cpu"],
        columns=160,
        rows=48,
        env=env,
    )
    try:
        assert tui.wait_for_output(b"demo_job", timeout_s=60) is not None, bytes(tui.output[-2000:])
        children = psutil.Process(tui.pid).children(recursive=True)
        assert children, "the demo job is not running"
        tui.send(b"q")
        assert tui.wait(timeout_s=30) == 0
        _gone, alive = psutil.wait_procs(children, timeout=10)
        assert not alive, f"demo job left running: {alive}"
        plain = re.sub(rb"\x1b\[[0-9;?<]*[A-Za-z]", b"", bytes(tui.output))
        assert b"Traceback" not in plain
        assert b"demo job stopped" in plain
    finally:
        tui.close()
