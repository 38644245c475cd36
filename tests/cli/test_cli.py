"""The real command line, run as a subprocess on this machine (which has no NVIDIA driver)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cli.schema import schema_problems

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from pty_run import PtyProcess  # noqa: E402 - benchmarks/ is not a package

XFERTOP = [sys.executable, "-m", "xfertop"]


def _run(*args: str, timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*XFERTOP, *args], capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL
    )


def test_help_lists_the_commands() -> None:
    result = _run("--help")
    assert result.returncode == 0
    for word in ("--once", "--json", "--interval", "demo", "run", "bench", "check", "attach"):
        assert word in result.stdout


def test_once_json_is_one_schema_conforming_document() -> None:
    result = _run("--once", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert schema_problems(document) == []
    if not document["gpus"]:
        assert "no NVIDIA driver" in document["driver"]["error"] or document["driver"]["error"]
    assert document["host"]["hostname"]
    topology = document["topology"]
    assert topology["numa_cpus"] and isinstance(topology["warnings"], list)
    if not topology["gpus"]:
        assert topology["error"].startswith("no NVIDIA GPU found")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--json",), "--json goes with --once"),
        (("--interval", "0"), "--interval must be at least"),
        (("--once", "--json", "--interval", "-1"), "--interval must be at least"),
        ((), "needs a terminal"),
    ],
)
def test_expected_failures_are_one_line_not_a_traceback(args: tuple[str, ...], words: str) -> None:
    result = _run(*args)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("xfertop: ") and words in result.stderr
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize("key", [b"q", b"\x03"], ids=["q", "ctrl+c"])
def test_tui_quits_on_q_and_ctrl_c(key: bytes) -> None:
    tui = PtyProcess(XFERTOP, columns=80, rows=24)
    try:
        assert tui.wait_for_output(b"processes", timeout_s=30) is not None, bytes(tui.output[-2000:])
        tui.send(key)
        assert tui.wait(timeout_s=20) == 0
        assert b"Traceback" not in tui.output
    finally:
        tui.close()


def test_tui_exits_cleanly_when_the_terminal_hangs_up() -> None:
    tui = PtyProcess(XFERTOP, columns=120, rows=40)
    try:
        assert tui.wait_for_output(b"processes", timeout_s=30) is not None
        tui.hang_up()
        assert tui.wait(timeout_s=20) == 0
    finally:
        tui.close()


def test_the_viewer_never_imports_torch() -> None:
    """First frame within a second: torch alone takes ~1.6 s to import, so the viewer must not."""
    code = (
        "import sys; import xfertop.cli.main, xfertop.cli.viewer, xfertop.cli.once, xfertop.ui.app; "
        "print(sorted(m for m in ('torch', 'numpy') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "[]", result.stderr


def test_once_without_json_prints_a_few_readable_lines() -> None:
    result = _run("--once")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("xfertop snapshot on ")
    assert not result.stdout.lstrip().startswith("{")


def test_once_reads_a_busy_core_as_busy_over_a_real_window() -> None:
    """Without a GPU the GPU sample returns at once; the host's per-core figures still span a window long
    enough for the kernel's 10 ms CPU accounting (before, a few milliseconds: every core read 0% or 100%,
    and a saturated machine read "0% busy")."""
    core = min(os.sched_getaffinity(0))
    spinner = subprocess.Popen(
        [sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{core}}})\nwhile True: pass"]
    )
    try:
        readings = []
        for _ in range(3):
            result = _run("--once", "--json")
            assert result.returncode == 0, result.stderr
            readings.append(json.loads(result.stdout)["host"]["cpu_per_core_percent"][core])
    finally:
        spinner.kill()
        spinner.wait()
    # The spinner holds the core (another process on it may take a share, never most of it).
    assert min(readings) >= 40.0, readings


_SGR = re.compile(rb"\x1b\[([0-9;:]*)m")


def _colour_parameters(output: bytes) -> list[bytes]:
    """The SGR sequences of ``output`` that set a colour (foreground or background, any palette)."""
    coloured = []
    for match in _SGR.finditer(output):
        numbers = [int(n) for n in re.split(rb"[;:]", match.group(1)) if n]
        if any(
            n in (38, 48) or 30 <= n <= 37 or 40 <= n <= 47 or 90 <= n <= 97 or 100 <= n <= 107
            for n in numbers
        ):
            coloured.append(match.group(0))
    return coloured


def test_no_color_means_no_colour_at_all_in_the_terminal() -> None:
    """no-color.org: with NO_COLOR set, no colour parameters (bold, dim and reverse may stay)."""
    tui = PtyProcess(XFERTOP, columns=160, rows=48, env={**os.environ, "NO_COLOR": "1"})
    try:
        assert tui.wait_for_output(b"processes", timeout_s=30) is not None, bytes(tui.output[-2000:])
        tui.read_for(2.0)  # a few refreshes after the first frame
        assert _SGR.search(bytes(tui.output)), "the screen was drawn with SGR sequences"
        assert _colour_parameters(bytes(tui.output)) == []
        tui.send(b"q")
        assert tui.wait(timeout_s=20) == 0
    finally:
        tui.close()


def test_a_commands_failure_is_named_by_its_command(tmp_path: Path) -> None:
    """A new user's `xfertop replay /nonexist` read "xfertop: /nonexist: no such file"."""
    result = _run("replay", str(tmp_path / "nonexist"))
    assert result.returncode == 2
    assert result.stderr == f"xfertop replay: {tmp_path / 'nonexist'}: no such file\n", result.stderr
