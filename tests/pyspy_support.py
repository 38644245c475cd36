"""Shared by the attach tests: the captured py-spy fixtures, and a real CPU training job to attach to."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from xfertop.analysis.stack_classify import LineText
from xfertop.model.stacks import StackWindow
from xfertop.sources.stacks.pyspy_output import parse_raw

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "pyspy"
TRAIN_SCRIPT = FIXTURES / "train_cpu.py"


def fixture_window(name: str) -> StackWindow:
    """A recorded 3 s window of a real training process (see fixtures/pyspy/README.md)."""
    stacks, commands = parse_raw((FIXTURES / f"{name}.raw").read_text())
    return StackWindow(
        root_pid=min(commands), started_at=0.0, duration_s=3.0, rate_hz=50, stacks=stacks, commands=commands
    )


def fixture_lines(name: str) -> LineText:
    """The source lines recorded with the fixture (the checkout's line numbers may have moved since)."""
    lines = json.loads((FIXTURES / f"{name}.lines.json").read_text())
    return lambda filename, line: lines.get(f"{filename}:{line}", "")


def ptrace_problem() -> str | None:
    """Why py-spy cannot attach on this machine (None when it can): tried on a real child process."""
    from xfertop.sources.stacks.pyspy_runner import PySpyError, dump, find_pyspy

    try:
        find_pyspy()
    except PySpyError as exc:
        return str(exc)
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; print('up', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        child.stdout.readline()
        dump(child.pid)
        return None
    except PySpyError as exc:
        return str(exc)
    finally:
        child.kill()
        child.wait()


@contextmanager
def training_job(*args: str) -> Iterator[subprocess.Popen[str]]:
    """train_cpu.py running past its warm-up steps (it prints "ready"); killed on exit with every process
    it started: under a forkserver the DataLoader workers are the forkserver's children, and killing the
    job alone left the forkserver and its workers running (their parent, the forkserver, lives on)."""
    job = subprocess.Popen(
        [sys.executable, str(TRAIN_SCRIPT), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        assert job.stdout is not None
        assert job.stdout.readline().strip() == "ready", "train_cpu.py exited before its warm-up steps"
        yield job
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(job.pid, signal.SIGKILL)
        job.wait()
