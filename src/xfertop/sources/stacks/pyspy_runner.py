"""py-spy as a child process: find the binary, take one dump, record one window. Never hangs.

py-spy has no Python API (only a Rust crate), so we run its binary. ``record`` writes its output only
when sampling stops, so a live view is a sequence of short windows (see sources.stacks).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from xfertop.model.stacks import StackWindow, ThreadStack
from xfertop.sources.host.ptrace_access import explain_pyspy_failure
from xfertop.sources.stacks.pyspy_output import parse_dump_json, parse_raw, parse_sample_errors

DEFAULT_RATE_HZ = 50
DEFAULT_WINDOW_S = 2
DUMP_TIMEOUT_S = 10.0
#: A ``--nonblocking`` dump reads the target's frames while it runs, and can meet a frame list mid-change:
#: py-spy then fails with "Failed to get stack traces" though the process is fine (seen once in a CI run
#: of tests/cli/test_attach_cli.py). Such a failure is tried again before it is reported.
DUMP_ATTEMPTS = 3
_RACED = "failed to get stack traces"
#: Beyond the window itself: py-spy's attach, its retries on a busy process and writing the file.
RECORD_GRACE_S = 10.0


class PySpyError(RuntimeError):
    """py-spy could not do what was asked; the message is a sentence for the person at the terminal."""


def find_pyspy() -> str:
    """The py-spy binary next to this interpreter (its wheel installs it there), else on PATH."""
    beside = Path(sys.executable).with_name("py-spy")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("py-spy")
    if found:
        return found
    raise PySpyError(
        "py-spy was not found next to this Python or on PATH: install it with "
        "`pip install py-spy` (xfertop attach needs it)."
    )


def dump(pid: int, timeout_s: float = DUMP_TIMEOUT_S, binary: str | None = None) -> tuple[ThreadStack, ...]:
    """Every thread of ``pid`` right now (``py-spy dump --json --nonblocking``); raises PySpyError."""
    command = [binary or find_pyspy(), "dump", "--pid", str(pid), "--json", "--nonblocking"]
    deadline = time.monotonic() + timeout_s
    for attempt in range(1, DUMP_ATTEMPTS + 1):
        try:
            done = subprocess.run(
                command,
                capture_output=True,
                text=True,
                timeout=max(0.1, deadline - time.monotonic()),
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise PySpyError(
                f"py-spy dump of process {pid} did not answer within {timeout_s:.0f} s."
            ) from exc
        if done.returncode == 0:
            break
        if _RACED not in done.stderr.lower() or attempt == DUMP_ATTEMPTS or time.monotonic() >= deadline:
            raise PySpyError(explain_pyspy_failure(pid, done.stderr))
    try:
        return parse_dump_json(done.stdout)
    except (ValueError, KeyError, TypeError) as exc:
        raise PySpyError(f"py-spy dump of process {pid} printed something unreadable: {exc}") from exc


class RecordWindow:
    """One ``py-spy record`` window over ``pid`` and its children; ``cancel()`` from any thread."""

    def __init__(
        self,
        pid: int,
        rate_hz: int = DEFAULT_RATE_HZ,
        window_s: int = DEFAULT_WINDOW_S,
        binary: str | None = None,
        nonblocking: bool = True,
    ) -> None:
        self.pid = pid
        #: False stops every thread of the target for each sample: complete stacks, but a torch process
        #: with many threads slows down badly (py-spy#872). Only for comparisons.
        self.nonblocking = nonblocking
        self.rate_hz = rate_hz
        self.window_s = window_s
        self._binary = binary
        self._process: subprocess.Popen[str] | None = None
        self._cancelled = threading.Event()

    def command(self, output_path: Path) -> list[str]:
        # --full-filenames: the classifier reads the innermost line's source text (.item(), .to()), and
        # py-spy's short names ("train.py") can only be resolved while the process lives (its cwd and
        # command line); a full path still reads after the job has exited, and whatever its cwd was.
        command = [
            self._binary or find_pyspy(),
            "record",
            "-p",
            str(self.pid),
            "-r",
            str(self.rate_hz),
            "-d",
            str(self.window_s),
            "-f",
            "raw",
            "-t",
            "-s",
            "-i",
            "--full-filenames",
            "-o",
            str(output_path),
        ]
        return [*command, "--nonblocking"] if self.nonblocking else command

    def run(self) -> StackWindow:
        """Sample for the window and parse it; a failure comes back as ``StackWindow.error``."""
        started_at = time.time()
        try:
            with tempfile.TemporaryDirectory(prefix="xfertop-pyspy-") as private_dir:
                output_path = Path(private_dir) / "window.raw"
                output = self._record(output_path)
                text = output_path.read_text() if output_path.exists() else ""
        except PySpyError as exc:
            return self._failed(started_at, str(exc))
        stacks, commands = parse_raw(text)
        failed = self._process is not None and self._process.returncode not in (0, None)
        if (failed or not stacks) and not self._cancelled.is_set():
            return self._failed(started_at, explain_pyspy_failure(self.pid, output))
        return StackWindow(
            root_pid=self.pid,
            started_at=started_at,
            duration_s=time.time() - started_at,
            rate_hz=self.rate_hz,
            stacks=stacks,
            commands=commands,
            sample_errors=parse_sample_errors(output),
        )

    def cancel(self) -> None:
        self._cancelled.set()
        process = self._process
        if process is not None and process.poll() is None:
            process.terminate()

    def _record(self, output_path: Path) -> str:
        if self._cancelled.is_set():
            return ""
        # py-spy prints its progress ("Samples: N Errors: M") on stdout and failures on stderr.
        self._process = subprocess.Popen(
            self.command(output_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        if self._cancelled.is_set():  # cancel() ran between the check above and Popen
            self._process.terminate()
        try:
            output, _ = self._process.communicate(timeout=self.window_s + RECORD_GRACE_S)
        except subprocess.TimeoutExpired as exc:
            self._process.kill()
            self._process.communicate()
            raise PySpyError(
                f"py-spy record of process {self.pid} did not finish within "
                f"{self.window_s + RECORD_GRACE_S:.0f} s; it was stopped."
            ) from exc
        return output

    def _failed(self, started_at: float, reason: str) -> StackWindow:
        return StackWindow(
            root_pid=self.pid,
            started_at=started_at,
            duration_s=time.time() - started_at,
            rate_hz=self.rate_hz,
            stacks=(),
            error=reason,
        )
