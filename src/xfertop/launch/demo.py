"""Start the demo job as a child process for `xfertop demo`, and stop it again.

The child writes its ring where the viewer looks (``ring_dir`` becomes its $XFERTOP_DIR) and its output
to a log file, never to the terminal the TUI draws on. It exits on its own if the viewer dies.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from xfertop.wire import ring_dir_path


@dataclass
class DemoJob:
    """A running demo job. ``stop()`` ends it (SIGTERM, then SIGKILL after a grace period)."""

    process: subprocess.Popen[bytes]
    log_path: Path
    ring_dir: Path
    _log: IO[bytes] | None = field(default=None, repr=False)
    _log_size: int = field(default=-1, repr=False)
    _phase: str | None = field(default=None, repr=False)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def wait(self, timeout_s: float) -> int | None:
        """The exit status, or None if it is still running after ``timeout_s``."""
        try:
            return self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, grace_s: float = 10.0) -> int:
        """Terminate the job and wait for it; its exit status (negative: killed by that signal)."""
        if self.process.poll() is None:
            self.process.terminate()
            if self.wait(grace_s) is None:
                self.process.kill()
                self.process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None
        return self.process.returncode

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def phase_text(self) -> str | None:
        """Which phase the demo is in, for the live view's header: "demo phase 1 of 2, starved:
        num_workers=0, pageable memory", from the job's own announcements in its log; None before the
        first one. The log is read again only when it grew."""
        try:
            size = self.log_path.stat().st_size
        except OSError:
            return self._phase
        if size != self._log_size:
            self._log_size = size
            self._phase = demo_phase(self.log_text()) or self._phase
        return self._phase

    def __enter__(self) -> DemoJob:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def demo_job_command(
    *,
    phase_seconds: float = 15.0,
    phase_steps: int | None = None,
    device: str = "auto",
    once_fixed: bool = False,
    python: str = sys.executable,
    parent_pid: int | None = None,
) -> list[str]:
    """The demo job's command line; it exits by itself when ``parent_pid`` (default: us) goes."""
    command = [
        python,
        "-m",
        "xfertop.launch.demo_job",
        "--phase-seconds",
        str(phase_seconds),
        "--device",
        device,
        "--parent-pid",
        str(os.getpid() if parent_pid is None else parent_pid),
    ]
    if phase_steps is not None:
        command += ["--phase-steps", str(phase_steps)]
    if once_fixed:
        command.append("--once-fixed")
    return command


def start_demo_job(
    *,
    ring_dir: str | os.PathLike[str] | None = None,
    log_path: str | os.PathLike[str] | None = None,
    phase_seconds: float = 15.0,
    phase_steps: int | None = None,
    device: str = "auto",
    once_fixed: bool = False,
    python: str = sys.executable,
    env: dict[str, str] | None = None,
) -> DemoJob:
    """Spawn the demo job. ``ring_dir``: where its ring goes (default: where the viewer looks);
    ``log_path``: its output (default: a new private file under the temp directory)."""
    child_env = dict(os.environ if env is None else env)
    if ring_dir is not None:
        child_env["XFERTOP_DIR"] = str(ring_dir)
    resolved_ring_dir = Path(ring_dir_path(child_env))
    if log_path is None:
        fd, name = tempfile.mkstemp(prefix="xfertop-demo-", suffix=".log")  # 0600, O_EXCL
        log: IO[bytes] = os.fdopen(fd, "wb")
        log_path = name
    else:
        log = open(log_path, "wb")  # noqa: SIM115 - kept open for the child's lifetime, closed by stop()
    command = demo_job_command(
        phase_seconds=phase_seconds,
        phase_steps=phase_steps,
        device=device,
        once_fixed=once_fixed,
        python=python,
    )
    try:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=child_env,
            close_fds=True,
        )
    except BaseException:
        log.close()
        raise
    return DemoJob(process=process, log_path=Path(log_path), ring_dir=resolved_ring_dir, _log=log)


_PHASE = re.compile(r"[Pp]hase (\d), (starved|fixed): (.*?)\.?$")


def demo_phase(log: str) -> str | None:
    """The last phase the demo job announced in ``log`` ("Phase 1, starved: ...", "phase 2, fixed: ..."),
    as "demo phase 1 of 2, starved: ..."; "demo over" once it said its fixed phase is over."""
    found = None
    for line in log.splitlines():
        if "fixed phase over" in line:
            found = "demo over: the fixed phase has ended"
            continue
        match = _PHASE.search(line)
        if match:
            found = f"demo phase {match.group(1)} of 2, {match.group(2)}: {match.group(3)}"
    return found
