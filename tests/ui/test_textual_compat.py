"""The viewer's driver (ui/textual_compat.py): an input thread that sleeps until a key comes (the parser's
deadline, and the real viewer in a pseudo-terminal: keys, a lone Escape, no thread ticking ten times a
second), and the pieces that let go of a dead terminal (tests/ui/test_terminal_watch.py hangs it up)."""

from __future__ import annotations

import os
import pty
import selectors
import signal
import sys
import threading
from pathlib import Path

import pytest
from textual._xterm_parser import XTermParser
from textual.app import App

from xfertop.ui.textual_compat import (
    FALLBACK_TICK_S,
    QuietLinuxDriver,
    TerminalOutput,
    _WakingEvent,
    parser_timeout,
)

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from pty_run import PtyProcess  # noqa: E402 - benchmarks/ is not a package

STOCK_DRIVER = "textual.drivers.linux_driver:LinuxDriver"


def test_an_idle_parser_needs_no_timeout_and_a_lone_escape_needs_its_own() -> None:
    parser = XTermParser()
    assert parser_timeout(parser, now=0.0) is None  # nothing pending: block until input comes
    assert list(parser.feed("\x1b")) == []  # ESC alone: a key, or the start of a sequence?
    deadline = parser._timeout_time
    assert deadline is not None
    assert parser_timeout(parser, now=deadline - 0.05) == pytest.approx(0.05)
    assert parser_timeout(parser, now=deadline + 1.0) == 0.0  # overdue: tick at once


def test_a_parser_without_the_deadline_attribute_ticks_as_textual_does() -> None:
    class OtherParser:
        pass

    assert parser_timeout(OtherParser(), now=0.0) == FALLBACK_TICK_S  # type: ignore[arg-type]


def _voluntary_switches(pid: int) -> dict[int, int]:
    """Voluntary context switches (sleeps) so far, per thread of ``pid``."""
    switches = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as status:
                for line in status:
                    if line.startswith("voluntary_ctxt_switches:"):
                        switches[int(tid)] = int(line.split()[1])
        except OSError:  # the thread ended meanwhile
            continue
    return switches


def _most_wakeups_per_second(env: dict[str, str], seconds: float = 3.0) -> float:
    """The highest per-thread wake-up rate of an idle viewer (no driver here; 60 s refresh)."""
    tui = PtyProcess([sys.executable, "-m", "xfertop", "--interval", "60"], columns=80, rows=24, env=env)
    try:
        assert tui.wait_for_output(b"processes", timeout_s=30) is not None, bytes(tui.output[-2000:])
        tui.read_for(1.0)  # start-up done: sources started, first snapshots drawn
        before = _voluntary_switches(tui.pid)
        tui.read_for(seconds)
        after = _voluntary_switches(tui.pid)
        tui.send(b"q")
        assert tui.wait(timeout_s=20) == 0
    finally:
        tui.close()
    return max((after[tid] - before.get(tid, 0)) / seconds for tid in after)


def test_no_thread_of_an_idle_viewer_wakes_ten_times_a_second() -> None:
    """Textual's own input thread wakes every 0.1 s (checked here, so this test can fail); ours sleeps."""
    env = {key: value for key, value in os.environ.items() if key != "TEXTUAL_DRIVER"}
    assert _most_wakeups_per_second({**env, "TEXTUAL_DRIVER": STOCK_DRIVER}) >= 9.0
    assert _most_wakeups_per_second(env) < 8.0


def test_keys_and_a_lone_escape_reach_the_app() -> None:
    """? opens the help, a lone Escape closes it, q quits.

    Escape alone is only known to be the Escape key once no byte follows it within ESCDELAY (0.1 s):
    it reaches the app through the parser's timeout, which a thread blocked for good would never run
    (the Escape would then wait for the q and both would arrive as alt+q, and the app would not quit)."""
    tui = PtyProcess([sys.executable, "-m", "xfertop", "--interval", "60"], columns=80, rows=24)
    try:
        assert tui.wait_for_output(b"processes", timeout_s=30) is not None, bytes(tui.output[-2000:])
        tui.send(b"?")
        assert tui.wait_for_output(b"closes this help", timeout_s=60) is not None
        tui.send(b"\x1b")
        tui.read_for(1.0)  # the person pauses: part of the input, ten times ESCDELAY
        tui.send(b"q")  # with the help still open, q would only close it and the app would go on
        assert tui.wait(timeout_s=20) == 0, bytes(tui.output[-2000:])
        assert b"Traceback" not in tui.output
    finally:
        tui.close()


def test_a_character_split_across_reads_is_not_taken_for_the_end_of_input() -> None:
    """The first byte of a two-byte character decodes to nothing until the second comes: the terminal
    must stay watched (a thread that took that for end of file would never see the q)."""
    tui = PtyProcess([sys.executable, "-m", "xfertop", "--interval", "60"], columns=80, rows=24)
    try:
        assert tui.wait_for_output(b"processes", timeout_s=30) is not None, bytes(tui.output[-2000:])
        tui.send("é".encode()[:1])
        tui.read_for(0.5)  # the person's terminal sent the halves apart: part of the input
        tui.send("é".encode()[1:])
        tui.read_for(0.5)
        tui.send(b"q")
        assert tui.wait(timeout_s=20) == 0, bytes(tui.output[-2000:])
    finally:
        tui.close()


def test_stopping_wakes_every_thread_waiting_on_the_wake_pipe_until_it_is_cleared() -> None:
    """A second input thread (Textual started one on the SIGCONT of a hang-up) must wake too: a byte read
    by the first woke only that one, and the app joined the other forever."""
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    event = _WakingEvent(wake_read, wake_write)
    woke: list[str] = []

    def wait(name: str) -> None:
        with selectors.SelectSelector() as selector:
            selector.register(wake_read, selectors.EVENT_READ)
            while not event.is_set():
                selector.select(30.0)
        woke.append(name)

    threads = [threading.Thread(target=wait, args=(name,)) for name in ("first", "second")]
    try:
        for thread in threads:
            thread.start()
        event.set()
        for thread in threads:
            thread.join(timeout=10)
        assert sorted(woke) == ["first", "second"]
        event.clear()
        with selectors.SelectSelector() as selector:
            selector.register(wake_read, selectors.EVENT_READ)
            assert selector.select(0) == [], "cleared, the pipe must no longer wake anyone"
    finally:
        os.close(wake_read)
        os.close(wake_write)


def test_output_to_a_terminal_that_hung_up_is_dropped_instead_of_raising() -> None:
    """Textual's writer thread died on the first EIO; its queue then filled and the app blocked on it."""
    master, slave = pty.openpty()
    terminal = open(slave, "w", encoding="utf-8", closefd=True)  # noqa: SIM115 - closed below
    try:
        output = TerminalOutput(terminal)
        output.write("frame 1")
        output.flush()
        assert os.read(master, 100) == b"frame 1"
        os.close(master)  # the terminal hangs up: writes to it fail with EIO from now on
        output.write("frame 2")
        output.flush()
        output.write("frame 3")
        assert output.failed
    finally:
        terminal.close()


async def test_a_sigcont_resumes_only_after_a_suspension_and_the_signals_are_given_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The kernel sends SIGCONT with the SIGHUP of a hang-up: Textual's handler then started the
    application mode again on the dead terminal (a second writer thread and input thread)."""
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGTSTP, signal.SIGCONT)}
    driver = QuietLinuxDriver(App())
    started: list[str] = []
    monkeypatch.setattr(driver, "start_application_mode", lambda: started.append("started"))
    monkeypatch.setattr(driver, "stop_application_mode", lambda: None)
    try:
        signal.raise_signal(signal.SIGCONT)
        assert started == [], "resumed an application mode that was never suspended"
        driver.suspend_application_mode()  # Ctrl+Z, App.suspend()
        signal.raise_signal(signal.SIGCONT)
        assert started == ["started"]
    finally:
        driver.close()
    assert {signum: signal.getsignal(signum) for signum in before} == before


def test_a_full_non_blocking_terminal_gets_all_its_output_once_it_is_read() -> None:
    """EAGAIN (a terminal made non-blocking by another program, a slow link) is no hang-up: the output
    waits for the terminal instead of being dropped for good (a live viewer's screen froze)."""
    master, slave = pty.openpty()
    os.set_blocking(slave, False)
    terminal = open(slave, "w", encoding="utf-8", closefd=True)  # noqa: SIM115 - closed below
    received = bytearray()
    frame = "x" * 200_000  # far more than the pty holds: the writes meet EAGAIN many times

    def read_it_all() -> None:
        while len(received) < len(frame):
            received.extend(os.read(master, 65536))

    reader = threading.Thread(target=read_it_all, daemon=True)
    try:
        output = TerminalOutput(terminal)
        reader.start()
        output.write(frame)
        output.flush()
        reader.join(timeout=30)
        assert bytes(received) == frame.encode() and not output.failed
    finally:
        terminal.close()
        os.close(master)
