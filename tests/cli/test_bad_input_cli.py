"""Bad input from a user at the real command line: one line "xfertop...: ..." and a sensible exit code,
never a traceback, never a hang. Each test runs `python -m xfertop` as a subprocess with no terminal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

XFERTOP = [sys.executable, "-m", "xfertop"]
ROOT = Path(__file__).resolve().parents[2]


def _run(
    *args: str, env: dict[str, str] | None = None, timeout_s: float = 30
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*XFERTOP, *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        stdin=subprocess.DEVNULL,
        env=env,
    )


def _assert_one_line_error(result: subprocess.CompletedProcess[str], words: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("xfertop") and words in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr


@pytest.fixture
def not_python() -> Iterator[int]:
    """A running process of ours that is not Python (and not an ancestor of xfertop)."""
    process = subprocess.Popen(["sleep", "60"])
    try:
        yield process.pid
    finally:
        process.kill()
        process.wait()


@pytest.mark.parametrize(
    "args",
    [
        ("--interval", "abc"),
        ("attach", "abc"),
        ("--bogus",),
        ("bench", "--gpu", "x"),
        ("--pcie", "nvlink", "--once"),
    ],
    ids=["interval-abc", "attach-abc", "unknown-option", "bench-bad-int", "pcie-choice"],
)
def test_argument_errors_are_one_line(args: tuple[str, ...]) -> None:
    result = _run(*args)
    _assert_one_line_error(result, "--help")


def test_once_json_with_pcie_counters_runs() -> None:
    """The choice reaches the GPU source (here: no driver, so no GPUs and the reason)."""
    result = _run("--pcie", "counters", "--once", "--json", timeout_s=60)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["gpus"] == [] or all(gpu["pcie"]["method"] != "gpm" for gpu in document["gpus"])


def test_live_attach_without_a_terminal_says_so_instead_of_hanging(not_python: int) -> None:
    result = _run("attach", str(not_python), timeout_s=20)
    _assert_one_line_error(result, "needs a terminal")


def test_attach_to_xfertops_own_parent_is_refused() -> None:
    # `xfertop attach $$` from a shell: py-spy would follow the shell's children and sample xfertop itself.
    result = _run("attach", str(os.getpid()), "--once", "--json")
    _assert_one_line_error(result, "parent")
    assert result.stdout == ""


def test_attach_seconds_zero_is_refused_not_taken_as_the_default(not_python: int) -> None:
    result = _run("attach", str(not_python), "--once", "--seconds", "0")
    _assert_one_line_error(result, "--seconds and --rate must be at least 1")


def test_once_text_shows_an_unusable_ring_directory(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    result = _run("--once", env={**os.environ, "XFERTOP_DIR": str(not_a_dir)})
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert f"ring directory {not_a_dir} is not a directory" in result.stdout


def test_once_text_shows_unreadable_ring_files(tmp_path: Path) -> None:
    (tmp_path / "garbage.ring").write_text("garbage")
    (tmp_path / "link.ring").symlink_to("/etc/passwd")
    result = _run("--once", env={**os.environ, "XFERTOP_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert "garbage.ring" in result.stdout and "link.ring is a symbolic link" in result.stdout


@pytest.mark.parametrize(
    "args",
    [("--once",), ("--once", "--json"), ("bench", "--json", "--no-save")],
    ids=["once", "once-json", "bench-json"],
)
@pytest.mark.parametrize("unbuffered", ["1", ""], ids=["unbuffered", "buffered"])
def test_a_full_disk_on_stdout_is_one_line(args: tuple[str, ...], unbuffered: str) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": unbuffered}
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [*XFERTOP, *args],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr, result.stderr
    assert result.returncode != 0
    assert result.stderr.splitlines()[-1] == "xfertop: [Errno 28] No space left on device", result.stderr


def test_once_json_with_stdout_closed_is_not_a_traceback() -> None:
    result = subprocess.run(
        [*XFERTOP, "--once", "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        close_fds=True,
        preexec_fn=lambda: os.close(1),
    )
    assert "Traceback" not in result.stderr, result.stderr


def test_attach_to_a_process_that_is_not_python_says_so(not_python: int) -> None:
    from pyspy_support import ptrace_problem

    if ptrace_problem() is not None:
        pytest.skip(f"py-spy cannot attach here: {ptrace_problem()}")
    result = _run("attach", str(not_python), "--once", "--seconds", "1")
    _assert_one_line_error(result, f"process {not_python} is not a Python process")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--device", "bogus"), "--device must be auto, cpu, cuda or cuda:N"),
        (("--phase-seconds", "-5"), "--phase-seconds must be a positive number"),
        (("--phase-seconds", "nan"), "--phase-seconds must be a positive number"),
    ],
    ids=["device-bogus", "phase-negative", "phase-nan"],
)
def test_demo_arguments_are_checked_before_the_demo_starts(args: tuple[str, ...], words: str) -> None:
    # Before: the demo job died at once (or ran no phase) behind an empty live view.
    _assert_one_line_error(_run("demo", *args), words)


@pytest.mark.parametrize("value", ["inf", "1e300"])
def test_an_endless_interval_is_refused(value: str) -> None:
    # Before: accepted; the samplers' Event.wait(inf) raised OverflowError and their threads died.
    _assert_one_line_error(_run("--interval", value), "--interval must be at most 3600 s")


def test_bench_compare_with_a_record_whose_thresholds_are_not_an_object(tmp_path: Path) -> None:
    record = json.loads((ROOT / "docs/measurements/h200-2026-11-29/bench_all_cases.json").read_text())
    record["thresholds"] = [1, 2]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(record))
    _assert_one_line_error(_run("bench", "--compare", str(old), "--no-save"), f"cannot compare with {old}")


def test_attach_json_without_once_is_refused(not_python: int) -> None:
    # Before: --json was silently ignored and the live view started.
    _assert_one_line_error(_run("attach", str(not_python), "--json"), "--json goes with --once")


def test_demo_exits_cleanly_and_stops_its_job_when_the_terminal_hangs_up(tmp_path: Path) -> None:
    import psutil

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from pty_run import PtyProcess

    env = {**os.environ, "XFERTOP_DIR": str(tmp_path / "rings")}
    tui = PtyProcess(
        [*XFERTOP, "demo", "--phase-seconds", "3", "--device", "cpu"], columns=120, rows=40, env=env
    )
    try:
        assert tui.wait_for_output(b"processes", timeout_s=60) is not None
        children = psutil.Process(tui.pid).children(recursive=True)
        tui.hang_up()
        # Like the plain viewer (test_tui_exits_cleanly_when_the_terminal_hangs_up): exit 0. Before, the
        # closing "demo job stopped" line to the dead terminal raised EIO and xfertop exited 1.
        assert tui.wait(timeout_s=30) == 0
        _gone, alive = psutil.wait_procs(children, timeout=10)
        assert not alive, f"demo job left running: {alive}"
    finally:
        tui.close()


def test_live_attach_exits_cleanly_when_the_terminal_hangs_up(not_python: int) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from pty_run import PtyProcess

    tui = PtyProcess([*XFERTOP, "attach", str(not_python)], columns=100, rows=30)
    try:
        assert tui.wait_for_output(b"xfertop attach", timeout_s=30) is not None
        tui.hang_up()
        # Like the plain viewer; before, the attach app had no SIGHUP handler and died of the signal.
        assert tui.wait(timeout_s=20) == 0
    finally:
        tui.close()


def test_once_json_names_a_ring_cut_mid_word_as_truncated(tmp_path: Path) -> None:
    from xfertop.reporter._identity import current_identity
    from xfertop.reporter._ring_writer import RingWriter

    writer = RingWriter(str(tmp_path), current_identity(), capacity=64)
    ring = Path(writer.path)
    os.truncate(ring, ring.stat().st_size - 3)  # a full disk or a copy cut short: not a whole 8-byte word
    result = _run("--once", "--json", env={**os.environ, "XFERTOP_DIR": str(tmp_path)})
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    (problem,) = json.loads(result.stdout)["jobs"]["problems"]
    # Before: "could not be read (TypeError: memoryview: length is not a multiple of itemsize)".
    assert "truncated" in problem and "TypeError" not in problem, problem


def test_attach_to_a_process_that_has_exited_but_is_not_reaped_says_so() -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    try:
        time.sleep(0.3)  # the child is a zombie: /proc/PID is still there
        result = _run("attach", str(pid), "--once")
    finally:
        os.waitpid(pid, 0)
    # Before: "process N is not a Python process py-spy can read".
    _assert_one_line_error(result, f"process {pid} has exited (a zombie")


@pytest.mark.parametrize("args", [(), ("demo",), ("attach", "PID")], ids=["viewer", "demo", "attach"])
def test_a_closed_stdin_is_no_terminal_not_a_traceback(args: tuple[str, ...], not_python: int) -> None:
    # `xfertop <&-`: sys.stdin is None; before, require_terminal raised AttributeError on .fileno().
    argv = [str(not_python) if arg == "PID" else arg for arg in args]
    result = subprocess.run(
        [*XFERTOP, *argv],
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
        preexec_fn=lambda: os.close(0),
    )
    _assert_one_line_error(result, "needs a terminal")


def test_a_startup_trace_path_that_cannot_be_opened_falls_back_to_stderr(tmp_path: Path) -> None:
    env = {**os.environ, "XFERTOP_TRACE_STARTUP": str(tmp_path / "missing-dir" / "trace.txt")}
    result = _run("--once", env=env)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert "cannot write the startup trace" in result.stderr
