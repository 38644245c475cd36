"""Run a terminal program in a pseudo-terminal of a given size, the way a person's SSH session would.

Used by benchmarks/startup.py and benchmarks/tui_cpu.py (and the demo test): start, detect the first
frame, read output so the program never blocks on a full pty, send keys, close the terminal.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Sequence


class PtyProcess:
    def __init__(
        self, argv: Sequence[str], columns: int = 160, rows: int = 48, env: dict[str, str] | None = None
    ) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        child_env = dict(os.environ if env is None else env)
        child_env.setdefault("TERM", "xterm-256color")
        self.started_s = time.perf_counter()
        self.process = subprocess.Popen(
            list(argv),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=child_env,
            start_new_session=True,
            close_fds=True,
        )
        os.close(slave)
        self.master = master
        self.output = bytearray()

    @property
    def pid(self) -> int:
        return self.process.pid

    def read_for(self, seconds: float) -> None:
        """Drain output for ``seconds`` (a program writing to a full pty would stall)."""
        deadline = time.perf_counter() + seconds
        while (remaining := deadline - time.perf_counter()) > 0:
            ready, _, _ = select.select([self.master], [], [], min(remaining, 0.05))
            if ready and not self._read_once():
                return

    def wait_for_output(self, marker: bytes, timeout_s: float) -> float | None:
        """Seconds from start until ``marker`` appeared in the output, or None after ``timeout_s``."""
        deadline = self.started_s + timeout_s
        while marker not in self.output:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self.master], [], [], min(remaining, 0.05))
            if ready and not self._read_once():
                return None
        return time.perf_counter() - self.started_s

    def send(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def hang_up(self) -> None:
        """What a dropped SSH session does: the terminal closes and the session gets SIGHUP."""
        os.close(self.master)
        self.master = -1
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGHUP)

    def wait(self, timeout_s: float) -> int | None:
        deadline = time.perf_counter() + timeout_s
        while self.process.poll() is None and time.perf_counter() < deadline:
            if self.master >= 0:
                self.read_for(0.05)
            else:
                time.sleep(0.05)  # nothing to read any more: poll the exit status
        return self.process.poll()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if self.master >= 0:
            os.close(self.master)
            self.master = -1

    def _read_once(self) -> bool:
        try:
            chunk = os.read(self.master, 65536)
        except OSError:
            return False
        self.output.extend(chunk)
        return bool(chunk)
