"""A terminal that goes away (a dropped SSH session, ``tmux kill-session``): the real viewer, in a real
pseudo-terminal, is gone within 2 s together with its children, whatever it was doing.

The trials are benchmarks/terminal_close.py's (50 per mode there): each starts the real CLI (CPU only),
brings it to a state (idle at 1 Hz, 4 Hz, `xfertop demo` with its demo job, the help open, a benchmark
child, a py-spy child) and takes the terminal away: ``hangup`` (the controlling terminal's master
closed: end of file, EIO, SIGHUP and SIGCONT), ``eof`` (the master closed, no signal), ``sighup`` (the
signal alone), ``sigterm`` (`kill PID`: leaving the same way, children stopped). Before, about half
the hang-ups left the viewer running for good and the others exited
at the next 5 s look at stdin."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from pyspy_support import ptrace_problem

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from terminal_close import LIMIT_S, MODES, STATES, TerminalSession, run_trial  # noqa: E402

TRIALS_PER_MODE = 20
PTRACE_PROBLEM = ptrace_problem()


def _trials() -> list:
    """TRIALS_PER_MODE per way of losing the terminal, the states taken in turn."""
    trials = []
    for mode in MODES:
        for index in range(TRIALS_PER_MODE):
            state = STATES[index % len(STATES)]
            trials.append(pytest.param(mode, state, id=f"{mode}-{index:02d}-{state}"))
    return trials


@pytest.mark.parametrize(("mode", "state"), _trials())
def test_the_viewer_and_its_children_are_gone_soon_after_the_terminal(mode: str, state: str) -> None:
    if state == "pyspy" and PTRACE_PROBLEM is not None:
        pytest.skip(f"py-spy cannot attach here: {PTRACE_PROBLEM}")
    trial = run_trial(mode, state)
    assert trial.setup_problem is None, trial.describe()
    assert not trial.survived, trial.describe()
    assert trial.returncode == 0, trial.describe()  # leaving because the terminal went is no failure


#: A viewer that cannot finish: its teardown is stuck (``stuck``: the event loop blocked in on_unmount) or
#: the program is stuck after the app returned (``after``: like `xfertop demo` waiting for its job), and a
#: child (a `sleep`) that nobody stops.
STUCK_APP = textwrap.dedent("""
    import subprocess, sys, time
    from textual.app import App
    from textual.widgets import Static
    from xfertop.ui.textual_compat import driver_class_for
    from xfertop.ui.terminal_watch import watch_terminal

    class Stuck(App[int]):
        def get_driver_class(self):
            return driver_class_for(super().get_driver_class())

        def compose(self):
            yield Static("ready")

        def on_mount(self):
            self.child = subprocess.Popen(["sleep", "600"])
            watch_terminal(self)
            if sys.argv[1] == "after":
                self.set_timer(0.3, lambda: self.exit(return_code=5))

        def on_unmount(self):
            if sys.argv[1] == "stuck":
                time.sleep(600)

    app = Stuck()
    app.run()
    print("app returned", flush=True)
    time.sleep(600)
""")


@pytest.mark.parametrize("where", ["stuck", "after"])
def test_a_viewer_that_cannot_finish_still_ends_by_the_deadline_with_its_children(where: str) -> None:
    from xfertop.ui.terminal_watch import EXIT_DEADLINE_S

    session = TerminalSession([sys.executable, "-c", STUCK_APP, where], controlling=True, columns=80, rows=24)
    children: list[psutil.Process] = []
    try:
        ready = b"ready" if where == "stuck" else b"app returned"
        assert session.wait_for_output(ready, timeout_s=60) is not None, bytes(session.output[-2000:])
        children = psutil.Process(session.pid).children(recursive=True)
        assert [child.name() for child in children] == ["sleep"]
        started = time.perf_counter()
        session.close_terminal()
        exit_s = session.wait_for_exit(LIMIT_S)
        assert exit_s is not None, "still running"
        assert exit_s >= EXIT_DEADLINE_S - 0.1, "ended before the deadline: was it stuck at all?"
        assert session.process.returncode == (0 if where == "stuck" else 5)  # the app's return code
        _gone, alive = psutil.wait_procs(
            children, timeout=max(0.1, LIMIT_S - (time.perf_counter() - started))
        )
        assert not alive, f"child left running: {alive}"
    finally:
        session.close()
        for child in children:
            if child.is_running():
                child.kill()


def test_a_terminal_that_stays_keeps_the_viewer() -> None:
    """Nothing but the terminal going (or SIGHUP) ends it: after a few seconds idle, q still quits."""
    session = TerminalSession(
        [sys.executable, "-m", "xfertop", "--interval", "0.25"], controlling=True, columns=80, rows=24
    )
    try:
        assert session.wait_for_output(b"processes", timeout_s=60) is not None, bytes(session.output[-2000:])
        session.read_for(3.0)  # the terminal is here and quiet: the viewer must stay
        assert session.process.poll() is None
        session.send(b"q")
        assert session.wait_for_exit(20) is not None
        assert session.process.returncode == 0
    finally:
        session.close()


def test_benchmarks_terminal_close_runs_and_reports_no_survivors() -> None:
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "terminal_close.py"),
            "--trials",
            "1",
            "--modes",
            "eof",
            "--states",
            "idle",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "eof: 1 trials, 0 survivors" in result.stdout
