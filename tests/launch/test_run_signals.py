"""`xfertop run` leaves every signal as the job would have had it: ignored stays ignored, in xfertop and
in the job; the mask passes through; what was not ignored is forwarded; a SIGKILL of xfertop kills the job.

Each story starts xfertop from a small launcher that sets up what a shell would hand over (`nohup`
ignores SIGHUP; a non-interactive shell ignores SIGINT and SIGQUIT for `&` jobs) and then execs the
command, with and without `xfertop run` in front, in a session of its own (no controlling terminal).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ring_test_tools import child_env, wait_until
from xfertop.launch.run import FORWARDED_SIGNALS

#: Execs argv[3:] with the signals named in argv[1] ignored and those in argv[2] blocked (comma lists of
#: numbers), every other signal a shell hands on at its default, and no core files: what an interactive
#: shell hands a command. Whatever pytest itself was started with (`nohup` ignores SIGHUP, a background
#: job of a script ignores SIGINT and SIGQUIT) must not leak into the case.
HANDED_OVER = """
import os, resource, signal, sys
ignored, blocked = ([int(n) for n in arg.split(",") if n] for arg in sys.argv[1:3])
for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT,
            signal.SIGUSR1, signal.SIGUSR2):
    signal.signal(sig, signal.SIG_DFL)
signal.pthread_sigmask(signal.SIG_SETMASK, [])
for sig in ignored:
    signal.signal(sig, signal.SIG_IGN)
signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
os.execvp(sys.argv[3], sys.argv[3:])
"""
XFERTOP_RUN = [sys.executable, "-m", "xfertop.cli.run", "--"]
#: The job: says it is ready with its pid, waits for a line on stdin, says so.
WAITS_FOR_A_LINE = ["sh", "-c", "echo ready $$; read line; echo got $line"]
SIGNAL_IDS = [sig.name for sig in FORWARDED_SIGNALS]


def _numbers(signals: tuple[int, ...]) -> str:
    return ",".join(str(int(sig)) for sig in signals)


def _start(
    tmp_path: Path, command: list[str], ignored: tuple[int, ...] = (), blocked: tuple[int, ...] = ()
) -> subprocess.Popen[str]:
    handed_over = [sys.executable, "-c", HANDED_OVER, _numbers(ignored), _numbers(blocked)]
    return subprocess.Popen(
        [*handed_over, *command],
        env=child_env(tmp_path / "rings"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _signal_lines(
    tmp_path: Path, command: list[str], ignored: tuple[int, ...], blocked: tuple[int, ...] = ()
) -> list[str]:
    grep = ["grep", "-E", "^Sig(Ign|Blk)", "/proc/self/status"]
    process = _start(tmp_path, [*command, *grep], ignored, blocked)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    return out.splitlines()


def _status_mask(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1], 16)
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def _signal_state(pid: int) -> str:
    """What /proc says of a process's signals and where it sleeps, for a failure message."""
    try:
        status = Path(f"/proc/{pid}/status").read_text().splitlines()
        wchan = Path(f"/proc/{pid}/wchan").read_text()
    except OSError as exc:
        return f"pid {pid}: {exc.strerror}"
    fields = [
        line
        for line in status
        if line.split(":")[0] in ("State", "SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt")
    ]
    return f"pid {pid} ({wchan}): " + ", ".join(field.replace("\t", " ") for field in fields)


def _wait_or_describe(process: subprocess.Popen[str], job_pid: int, timeout_s: float = 60) -> int:
    """The launcher's exit status; if it hangs, fail with the signal state of it and of its job."""
    try:
        return process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        launcher, job = _signal_state(process.pid), _signal_state(job_pid)
        tasks = (
            sorted(Path(f"/proc/{process.pid}/task").iterdir())
            if Path(f"/proc/{process.pid}").exists()
            else []
        )
        threads = "; ".join(_signal_state(int(task.name)) for task in tasks)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise AssertionError(
            f"xfertop run did not end: {launcher}; its threads: {threads}; the job: {job}"
        ) from None


def _has(mask: int, sig: int) -> bool:
    return bool(mask >> (sig - 1) & 1)


@pytest.mark.parametrize("ignored", [True, False], ids=["ignored", "default"])
@pytest.mark.parametrize("sig", FORWARDED_SIGNALS, ids=SIGNAL_IDS)
def test_the_job_starts_with_the_disposition_it_would_have_had(
    tmp_path: Path, sig: int, ignored: bool
) -> None:
    handed = (sig,) if ignored else ()
    assert _signal_lines(tmp_path, XFERTOP_RUN, handed) == _signal_lines(tmp_path, [], handed)


def test_the_job_starts_with_the_signal_mask_it_would_have_had(tmp_path: Path) -> None:
    blocked = (signal.SIGUSR1, signal.SIGTERM, signal.SIGWINCH)
    ignored = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT)  # `nohup cmd &` from a script
    lines = _signal_lines(tmp_path, XFERTOP_RUN, ignored, blocked)
    assert lines == _signal_lines(tmp_path, [], ignored, blocked)
    assert all(_has(int(lines[0].split()[1], 16), s) for s in blocked)  # SigBlk: it is not a blank result


@pytest.mark.parametrize("sig", FORWARDED_SIGNALS, ids=SIGNAL_IDS)
def test_a_signal_the_user_ignored_is_ignored_by_xfertop_and_the_job(tmp_path: Path, sig: int) -> None:
    # `nohup xfertop run -- python train.py &`, then the logout's SIGHUP, to xfertop and to the job.
    process = _start(tmp_path, [*XFERTOP_RUN, *WAITS_FOR_A_LINE], ignored=(sig,))
    assert process.stdout is not None and process.stdin is not None
    ready, job_pid = process.stdout.readline().split()
    assert ready == "ready"
    launcher_ignores = _status_mask(process.pid, "SigIgn")
    launcher_catches = _status_mask(process.pid, "SigCgt")
    os.kill(process.pid, sig)
    os.kill(int(job_pid), sig)
    os.killpg(process.pid, sig)
    process.stdin.write("line\n")
    process.stdin.close()
    assert process.wait(timeout=60) == 0
    assert process.stdout.read() == "got line\n"
    assert _has(launcher_ignores, sig) and not _has(launcher_catches, sig)


@pytest.mark.parametrize("sig", FORWARDED_SIGNALS, ids=SIGNAL_IDS)
def test_a_signal_that_was_not_ignored_reaches_the_job_and_xfertop_dies_of_it(
    tmp_path: Path, sig: int
) -> None:
    process = _start(tmp_path, [*XFERTOP_RUN, *WAITS_FOR_A_LINE])
    assert process.stdout is not None
    ready, job_pid = process.stdout.readline().split()
    assert ready == "ready"
    os.kill(process.pid, sig)
    assert _wait_or_describe(process, int(job_pid)) == -sig
    assert process.stdout.read() == ""  # the job died of it too: it never got its line


def test_only_the_launchers_main_thread_can_take_a_forwarded_signal(tmp_path: Path) -> None:
    """The summary's follower thread blocks the forwarded signals: the kernel may hand a process-directed
    signal to any thread that does not, and one handled there never wakes the main thread from waitid."""
    process = _start(tmp_path, [*XFERTOP_RUN, *WAITS_FOR_A_LINE])
    assert process.stdout is not None and process.stdin is not None
    process.stdout.readline()
    tasks = Path(f"/proc/{process.pid}/task")
    wait_until(lambda: len(list(tasks.iterdir())) > 1, 10, "the summary's follower thread to start")

    def main_thread_takes_them() -> bool:  # it blocks them for the instant the thread starts
        main = _status_mask(process.pid, "SigBlk")
        return not any(_has(main, sig) for sig in FORWARDED_SIGNALS)

    wait_until(main_thread_takes_them, 10, "the launcher's main thread to unblock the signals")
    others = [task for task in tasks.iterdir() if task.name != str(process.pid)]
    masks = [_status_mask(int(task.name), "SigBlk") for task in others]
    process.stdin.write("line\n")
    process.stdin.close()
    assert process.wait(timeout=60) == 0
    assert all(_has(mask, sig) for mask in masks for sig in FORWARDED_SIGNALS), [hex(m) for m in masks]


def test_sigkill_of_xfertop_kills_the_job_too(tmp_path: Path) -> None:
    process = _start(tmp_path, [*XFERTOP_RUN, *WAITS_FOR_A_LINE])
    assert process.stdout is not None
    _ready, job_pid = process.stdout.readline().split()
    os.kill(process.pid, signal.SIGKILL)
    assert process.wait(timeout=60) == -signal.SIGKILL
    wait_until(lambda: not Path(f"/proc/{job_pid}").exists(), 10, "the job to die with xfertop")
