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

import psutil

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
    with _started([sys.executable, str(TRAIN_SCRIPT), *args], None) as job:
        yield job


@contextmanager
def job_under_run(ring_dir: Path, script: Path, *args: str) -> Iterator[int]:
    """``script`` (which prints "ready" once warm) under the real `xfertop run`, its hooks' frames in every
    stack, with xfertop imported from this checkout (not from site-packages: as a ``pip install -e``):
    the job's pid."""
    from ring_test_tools import child_env

    argv = [sys.executable, "-m", "xfertop.cli.run", "--no-summary", "--", sys.executable, str(script)]
    with _started([*argv, *args], child_env(ring_dir)) as launcher:
        (job,) = psutil.Process(launcher.pid).children()
        yield job.pid


@contextmanager
def _started(argv: list[str], env: dict[str, str] | None) -> Iterator[subprocess.Popen[str]]:
    job = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True, env=env
    )
    try:
        assert job.stdout is not None
        assert job.stdout.readline().strip() == "ready", f"{argv[-1]} exited before its warm-up steps"
        yield job
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(job.pid, signal.SIGKILL)
        job.wait()
