"""`xfertop run -- CMD ...`: start a training command with every DataLoader watched, no code change.

The child inherits stdin, stdout, stderr, the signal mask and every signal disposition it would have had
without xfertop: a signal ignored when xfertop started (`nohup` ignores SIGHUP, a non-interactive shell
ignores SIGINT and SIGQUIT for `&` jobs) stays ignored in both, and xfertop never forwards it. Signals
that were not ignored are passed on to the child (a Ctrl-C or Ctrl-\\ from the terminal already reaches
it, so it is not sent twice), and xfertop ends the way the child did: the same exit status, or death by
the same signal. SIGPIPE and SIGXFSZ start at their defaults, as a shell gives them (Python ignores both
in xfertop's own process, which hides what they were before).

SIGKILL of xfertop itself cannot be passed on by a handler; the kernel passes it instead
(PR_SET_PDEATHSIG): the command xfertop started dies of SIGKILL with it, as it would have had the same
kill reached it without xfertop. That is the command only: when it is itself a launcher (torchrun,
`accelerate launch`, a shell script), its own children are left as a `kill -9` of that launcher leaves
them without xfertop.

How the command ended is written into the rings of the processes it started (launch/exit_record.py), and
unless `--no-summary`, a summary of the run follows the job's output on stderr (launch/summary.py,
docs/summary.md).
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping
from types import FrameType

import xfertop
from xfertop import wire
from xfertop.launch.exit_record import new_launch_token, record_exit, wait_without_reaping
from xfertop.launch.summary import RunFollower
from xfertop.sources.jobs.ring_reader import remove_ended_rings

BOOTSTRAP_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bootstrap")
FORWARDED_SIGNALS = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)
#: Signals the terminal sends to its whole foreground process group (Ctrl-C, Ctrl-\\).
TERMINAL_SIGNALS = (signal.SIGINT, signal.SIGQUIT)
PR_SET_PDEATHSIG = 1
EXIT_NOT_FOUND, EXIT_NOT_EXECUTABLE, EXIT_USAGE = 127, 126, 2


def child_environment(base: Mapping[str, str], copy_timing: bool, launch_token: str = "") -> dict[str, str]:
    env = dict(base)
    existing = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = BOOTSTRAP_DIR + (os.pathsep + existing if existing else "")
    env["XFERTOP_RUN"] = "1"
    env["XFERTOP_PACKAGE_PARENT"] = os.path.dirname(os.path.dirname(os.path.abspath(xfertop.__file__)))
    if copy_timing:
        env["XFERTOP_COPY_TIMING"] = "1"
    else:
        env.pop("XFERTOP_COPY_TIMING", None)
    if launch_token:
        env[wire.LAUNCH_TOKEN_ENV] = launch_token
    return env


def _terminal_delivers_it() -> bool:
    """A Ctrl-C typed in our terminal goes to the whole foreground group, the child included.

    The controlling terminal is asked, not stdin: `xfertop run ... < file` still runs in a terminal.
    """
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:  # no controlling terminal
        return False
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(fd)


def signals_to_forward() -> tuple[signal.Signals, ...]:
    """The forwarded signals whose inherited disposition is not "ignore": those the user can send."""
    return tuple(sig for sig in FORWARDED_SIGNALS if signal.getsignal(sig) != signal.SIG_IGN)


def not_executable(program: str) -> str:
    """Why ``program`` could not be started where exec said permission denied: a directory says so (as
    bash does), not "permission denied" (a new user ran `xfertop run -- /tmp/nu`)."""
    return "is a directory" if os.path.isdir(program) else "permission denied"


def _die_with_the_launcher() -> Callable[[], None] | None:
    """What the child runs before exec: SIGKILL when the launcher dies (see the module docstring).

    Looked up here, before the fork: the child only makes the call. None where there is no prctl.
    """
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux: the job outlives a killed launcher
        return None
    launcher_pid = os.getpid()
    kill, getppid, getpid = os.kill, os.getppid, os.getpid

    def in_child() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if getppid() != launcher_pid:  # the launcher died between fork and prctl
            kill(getpid(), signal.SIGKILL)

    return in_child


def _wait_and_record(child: subprocess.Popen[bytes], token: str) -> int:
    """Wait for the command, record how it ended in its rings (see exit_record), then reap it."""
    status = wait_without_reaping(child.pid)
    if status is not None:
        record_exit(token, child.pid, status)
    return child.wait()


def _start_follower(summary: bool, token: str) -> RunFollower | None:
    """The summary's follower thread, started with the forwarded signals blocked (threads inherit the
    mask): a process-directed signal then always reaches the main thread. Delivered to the follower, its
    Python handler would wait for the main thread's next bytecode, which blocks in waitid until the job
    ends: the signal would never be forwarded."""
    if not summary:
        return None
    with contextlib.suppress(Exception):
        follower = RunFollower(token)
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED_SIGNALS)
        try:
            follower.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        return follower
    return None


def _print_summary(follower: RunFollower | None, command: list[str], status: int) -> None:
    """The end-of-run summary on stderr, after the job's output; any failure of it is silent."""
    if follower is None:
        return
    with contextlib.suppress(Exception):
        from xfertop.launch.summary_report import build_summary, render_text, write_json

        follower.finish()
        summary = build_summary(follower, command, status)
        json_path = write_json(summary, wire.ring_dir_path()) if summary["steps"] else None
        sys.stderr.write(render_text(summary, json_path))
        sys.stderr.flush()


def _signal_child(child: subprocess.Popen[bytes], signum: int) -> None:
    """Forward a signal with os.kill, not Popen.send_signal: that polls first, and a poll would reap the
    child before _wait_and_record reads its status with WNOWAIT (no exit status recorded). Until our own
    reap sets returncode the pid stays the child's (a zombie cannot be reused)."""
    if child.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child.pid, signum)


def run_command(command: list[str], copy_timing: bool = True, summary: bool = True) -> int:
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        print("xfertop run: no command given: `xfertop run -- python train.py ARGS`", file=sys.stderr)
        return EXIT_USAGE
    started: list[subprocess.Popen[bytes]] = []
    token = new_launch_token()
    follower: RunFollower | None = None
    early: list[int] = []  # signals that came before the child existed: sent to it once it does

    def forward(signum: int, _frame: FrameType | None) -> None:
        if signum in TERMINAL_SIGNALS and _terminal_delivers_it():
            return
        if not started:
            early.append(signum)
            return
        _signal_child(started[0], signum)

    # Handlers first: a signal that arrives while the child starts is not lost on xfertop itself. Caught
    # signals go back to their defaults at exec; ignored ones were never touched and stay ignored.
    previous = {sig: signal.signal(sig, forward) for sig in signals_to_forward()}
    try:
        try:
            # close_fds=False: descriptors handed to us (`3>log`) reach the job as they would without
            # xfertop; our own are non-inheritable (PEP 446) and stay ours. restore_signals (the default)
            # puts SIGPIPE and SIGXFSZ back to their defaults.
            started.append(
                subprocess.Popen(
                    command,
                    env=child_environment(os.environ, copy_timing, token),
                    close_fds=False,
                    preexec_fn=_die_with_the_launcher(),
                )
            )
            follower = _start_follower(summary, token)
            for signum in early:
                _signal_child(started[0], signum)
            # The rings of jobs that ended long ago, whoever started them: once the job runs, so that a
            # slow ring directory (NFS) or a surprise delays nothing of the job's.
            with contextlib.suppress(Exception):
                remove_ended_rings()
        except FileNotFoundError:
            print(f"xfertop run: {command[0]}: command not found", file=sys.stderr)
            return EXIT_NOT_FOUND
        except PermissionError:
            print(f"xfertop run: {command[0]}: {not_executable(command[0])}", file=sys.stderr)
            return EXIT_NOT_EXECUTABLE
        status = _wait_and_record(started[0], token)
        _print_summary(follower, command, status)  # while signals are still forwarded (to no one now)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if status < 0:  # the child died of a signal: so do we, so our parent sees the same
        with contextlib.suppress(OSError, ValueError):  # SIGKILL (the OOM killer) has no handler to reset
            signal.signal(-status, signal.SIG_DFL)
        with contextlib.suppress(OSError, ValueError):  # the job's core file is the one that matters
            resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
        os.kill(os.getpid(), -status)
        return 128 - status
    return status
