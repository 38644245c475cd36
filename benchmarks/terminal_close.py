"""Does the viewer leave when its terminal goes away? Trials in a real pseudo-terminal.

    python benchmarks/terminal_close.py [--trials 50] [--modes hangup,eof,sighup,sigterm] [--states ...]

Each trial starts the real CLI (`python -m xfertop` or `xfertop demo`, CPU only) in a pty of its own,
brings it to a state (``STATES``, cycled through), then takes the terminal away (``MODES``) and waits for
the process and its children to be gone. Printed per mode: trials, survivors (a process or a child still
there ``LIMIT_S`` after the terminal went), exit times, how many exits came at the deadline of
ui/terminal_watch.py (the process ended by ``os._exit`` rather than by the app), exit codes. Exits with 1
if anything survived. Also the helpers of tests/ui/test_terminal_watch.py.

Modes (what happened to the terminal):
- ``hangup``: the pty is the process's controlling terminal, as sshd and tmux make it, and its master is
  closed (a dropped SSH session, ``tmux kill-session``): reads give end of file, writes fail with EIO,
  and the kernel sends SIGHUP, then SIGCONT.
- ``eof``: the master is closed, but the pty is not the controlling terminal: no signal, only the dead
  terminal.
- ``sighup``: SIGHUP alone (``kill -HUP``), the terminal still there and read.
- ``sigterm``: SIGTERM alone (``kill PID``): the viewer leaves the same way, children stopped.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import pty
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from xfertop.ui.terminal_watch import EXIT_DEADLINE_S

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pty_run import PtyProcess  # benchmarks/ is not a package

MODES = ("hangup", "eof", "sighup", "sigterm")
#: What the viewer is doing when its terminal goes: a plain viewer at 1 Hz and at 4 Hz, `xfertop demo`
#: (a job and its demo job child), the help (a modal screen), a benchmark child, a py-spy child.
STATES = ("idle", "4hz", "jobs", "help", "bench", "pyspy")
#: The promise is 2 s from the terminal going to the process and its children being gone.
PROMISE_S = 2.0
#: What a trial allows: the promise plus a margin for a loaded 2-core machine.
LIMIT_S = PROMISE_S + 1.5
#: Start-up (first frame, a demo job's first steps, a child spawned) may take this long under load.
SETUP_TIMEOUT_S = 90.0


class TerminalSession(PtyProcess):
    """``PtyProcess``, with the pty made the child's controlling terminal when ``controlling``: closing the
    master then hangs the session up (SIGHUP, SIGCONT), as when sshd or tmux let go of it."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        controlling: bool,
        columns: int = 120,
        rows: int = 40,
        env: dict[str, str] | None = None,
    ) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        child_env = dict(os.environ if env is None else env)
        child_env.setdefault("TERM", "xterm-256color")
        self.started_s = time.perf_counter()
        # After setsid (start_new_session), fd 0 (the slave) becomes the new session's terminal.
        take_terminal = (lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0)) if controlling else None
        self.process = subprocess.Popen(
            list(argv),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=child_env,
            start_new_session=True,
            close_fds=True,
            preexec_fn=take_terminal,
        )
        os.close(slave)
        self.master = master
        self.output = bytearray()

    def close_terminal(self) -> None:
        os.close(self.master)
        self.master = -1

    def wait_for_exit(self, timeout_s: float) -> float | None:
        """Seconds until the process exited (output drained meanwhile while the terminal is open), or
        None after ``timeout_s``."""
        started = time.perf_counter()
        if self.master < 0:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=timeout_s)
        else:
            self.wait(timeout_s)
        return time.perf_counter() - started if self.process.poll() is not None else None


@dataclass
class Trial:
    mode: str
    state: str
    #: Seconds from the terminal going to the process's exit; None: still running at LIMIT_S.
    exit_s: float | None = None
    returncode: int | None = None
    #: Children (pids) still running LIMIT_S after the terminal went.
    children_left: list[int] = field(default_factory=list)
    #: The trial could not set its state up (then nothing was measured).
    setup_problem: str | None = None

    @property
    def survived(self) -> bool:
        return self.setup_problem is None and (self.exit_s is None or bool(self.children_left))

    def describe(self) -> str:
        if self.setup_problem:
            return f"{self.mode}/{self.state}: not set up: {self.setup_problem}"
        gone = "still running" if self.exit_s is None else f"exit {self.returncode} after {self.exit_s:.2f} s"
        left = f", children left: {self.children_left}" if self.children_left else ""
        return f"{self.mode}/{self.state}: {gone}{left}"


def _viewer(*args: str) -> list[str]:
    return [sys.executable, "-m", "xfertop", *args]


def _demo() -> list[str]:
    return _viewer("demo", "--phase-seconds", "600", "--device", "cpu")


def _child_named(session: TerminalSession, word: str, timeout_s: float) -> bool:
    """Wait (reading the screen meanwhile) until a process below the viewer has ``word`` in its command."""
    deadline = time.perf_counter() + timeout_s
    while time.perf_counter() < deadline:
        with contextlib.suppress(psutil.Error):
            for child in psutil.Process(session.pid).children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    if any(word in part for part in child.cmdline()):
                        return True
        session.read_for(0.05)
    return False


def _open_help(session: TerminalSession) -> str | None:
    session.send(b"?")
    found = session.wait_for_output(b"closes this help", timeout_s=SETUP_TIMEOUT_S)
    return None if found is not None else "the help did not open"


def _start_benchmark(session: TerminalSession) -> str | None:
    session.send(b"b")  # no GPU here: the child reports that, once torch is imported (~2 s)
    return None if _child_named(session, "xfertop.bench", timeout_s=30) else "no benchmark child came"


def _attach_py_spy(session: TerminalSession) -> str | None:
    session.send(b"\t")  # focus goes to the jobs table, on the demo job's rank
    session.read_for(0.3)
    session.send(b"s")
    return None if _child_named(session, "py-spy", timeout_s=30) else "no py-spy child came"


@dataclass(frozen=True)
class State:
    argv: list[str]
    #: On screen once the state's view is up.
    ready: bytes
    #: What brings the viewer to the state once ``ready`` showed (None when nothing), and why it failed.
    enter: Callable[[TerminalSession], str | None] | None = None


def state_setup(state: str) -> State:
    return {
        "idle": State(_viewer("--interval", "1"), b"processes"),
        "4hz": State(_viewer("--interval", "0.25"), b"processes"),
        "jobs": State(_demo(), b"demo_job"),
        "help": State(_viewer("--interval", "1"), b"processes", _open_help),
        "bench": State(_viewer("--interval", "1"), b"processes", _start_benchmark),
        "pyspy": State(_demo(), b"demo_job", _attach_py_spy),
    }[state]


def run_trial(mode: str, state: str, limit_s: float = LIMIT_S) -> Trial:
    """One viewer brought to ``state``, its terminal taken away as ``mode`` says; what was left after
    ``limit_s``. Whatever happens, nothing it started is left running afterwards."""
    trial = Trial(mode, state)
    setup = state_setup(state)
    with tempfile.TemporaryDirectory(prefix="xfertop-close-") as ring_dir:
        env = {**os.environ, "XFERTOP_DIR": ring_dir}
        env.pop("TEXTUAL_DRIVER", None)
        session = TerminalSession(setup.argv, controlling=mode == "hangup", env=env)
        children: list[psutil.Process] = []
        try:
            if session.wait_for_output(setup.ready, timeout_s=SETUP_TIMEOUT_S) is None:
                trial.setup_problem = f"{setup.ready!r} never showed: {bytes(session.output[-300:])!r}"
                return trial
            if setup.enter is not None and (problem := setup.enter(session)) is not None:
                trial.setup_problem = problem
                return trial
            children = psutil.Process(session.pid).children(recursive=True)
            started = time.perf_counter()
            if mode in ("sighup", "sigterm"):
                os.kill(session.pid, signal.SIGHUP if mode == "sighup" else signal.SIGTERM)
            else:
                session.close_terminal()
            trial.exit_s = session.wait_for_exit(limit_s)
            trial.returncode = session.process.poll()
            remaining_s = max(0.1, limit_s - (time.perf_counter() - started))
            _gone, alive = psutil.wait_procs(children, timeout=remaining_s)
            trial.children_left = [child.pid for child in alive]
        finally:
            _end(session, children)
    return trial


def _end(session: TerminalSession, children: list[psutil.Process]) -> None:
    """Kill what the trial left (by pid: the viewer, then the children it had)."""
    with contextlib.suppress(psutil.Error):
        children += psutil.Process(session.pid).children(recursive=True)
    session.close()
    for child in children:
        with contextlib.suppress(psutil.Error):
            child.kill()
    psutil.wait_procs(children, timeout=5)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=50, help="trials per mode (default 50)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"default {','.join(MODES)}")
    parser.add_argument(
        "--states",
        default=",".join(STATES),
        help=f"cycled through, one per trial (default {','.join(STATES)})",
    )
    parser.add_argument("--verbose", action="store_true", help="print every trial")
    args = parser.parse_args(argv)
    states = args.states.split(",")
    survivors_in_all = 0
    for mode in args.modes.split(","):
        trials = [run_trial(mode, states[index % len(states)]) for index in range(args.trials)]
        measured = [trial for trial in trials if trial.setup_problem is None]
        survivors = [trial for trial in measured if trial.survived]
        survivors_in_all += len(survivors)
        times = sorted(trial.exit_s for trial in measured if trial.exit_s is not None)
        codes = sorted({trial.returncode for trial in measured if trial.exit_s is not None})
        timing = (
            f"exit after {statistics.median(times):.2f} s median, {times[-1]:.2f} s max"
            if times
            else "no exit"
        )
        # Exits at or after the deadline were most likely the deadline's (os._exit), not the app's own.
        late = sum(1 for exit_s in times if exit_s >= EXIT_DEADLINE_S)
        print(
            f"{mode}: {len(measured)} trials, {len(survivors)} survivors; {timing}; {late} at or after the "
            f"{EXIT_DEADLINE_S} s deadline; exit codes {codes}",
            flush=True,
        )
        for trial in trials:
            if args.verbose or trial.survived or trial.setup_problem:
                print(f"  {trial.describe()}", flush=True)
    return 1 if survivors_in_all else 0


if __name__ == "__main__":
    sys.exit(main())
