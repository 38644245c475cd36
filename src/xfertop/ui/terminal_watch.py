"""Leave when the terminal goes away (a dropped SSH session, a killed tmux): quietly, within
``EXIT_DEADLINE_S``, whatever the app was doing, and with no child process left behind.

Two things say the terminal went away: SIGHUP, and the terminal itself, hung up (a thread sleeps in
``poll()`` on it, asking for no event: only a hang-up or an error wakes it, never a key). Either asks the
app to exit, as `q` does, sends SIGTERM to our child processes (the demo job, a benchmark, py-spy: nobody
will look at what they do; the app's own teardown stops them too, but one after the other) and starts
the deadline. Once the terminal is known to be gone, the standard streams that pointed at it point at
/dev/null: nothing written afterwards (Textual restoring the screen, a closing message, the interpreter's
last flush) can fail with EIO. Should the app not have finished by the deadline (a stuck thread, a child
that does not stop), the deadline kills every process below ours and ends the process with ``os._exit``
and the app's return code: a viewer whose terminal went away never stays behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import threading
import time
from collections.abc import Callable

import psutil
from textual.app import App

#: From the terminal going away (or SIGHUP) to the process's end, at the latest (then SIGKILL for what is
#: left below us, and os._exit).
EXIT_DEADLINE_S = 1.5
_GONE = select.POLLHUP | select.POLLERR


def watch_terminal(app: App) -> None:
    """From now on (call it from ``app``'s event loop), SIGHUP, SIGTERM or a hung-up terminal makes ``app``
    exit, and the process ends within ``EXIT_DEADLINE_S`` even if the app does not."""
    watch = _TerminalWatch(app, asyncio.get_running_loop())
    # Where signals cannot be set (not the main thread) the terminal itself is still watched. A plain
    # signal handler, not the event loop's: it runs even while the loop is stuck.
    # SIGTERM (`kill PID`) the same way: dying of it at once left a benchmark or py-spy child running.
    with contextlib.suppress(ValueError):
        for signum in (signal.SIGHUP, signal.SIGTERM):
            signal.signal(signum, lambda _signum, _frame: watch.leave())
    terminal_fds = [fd for fd in (0, 1, 2) if _is_terminal(fd)]
    if terminal_fds:
        threading.Thread(
            target=watch.wait_for_hang_up, args=(terminal_fds,), daemon=True, name="xfertop-terminal-watch"
        ).start()


def _is_terminal(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


class _TerminalWatch:
    def __init__(self, app: App, loop: asyncio.AbstractEventLoop) -> None:
        self.app = app
        self.loop = loop
        self._lock = threading.Lock()
        self._deadline: threading.Thread | None = None

    def leave(self) -> None:
        """Ask the app to exit, stop the children, start the deadline (safe from a signal handler and
        from any thread)."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: the app already finished
            self.loop.call_soon_threadsafe(self.app.exit)
        # Never blocks: a signal handler may interrupt a thread holding the lock (then the first caller
        # is starting the deadline already).
        if not self._lock.acquire(blocking=False):
            return
        try:
            if self._deadline is None:
                self._deadline = threading.Thread(
                    target=self.end_by_deadline, daemon=True, name="xfertop-exit-deadline"
                )
                self._deadline.start()
        finally:
            self._lock.release()

    def wait_for_hang_up(self, fds: list[int]) -> None:
        """Sleep until one of ``fds`` (the terminal) hangs up or fails; then leave."""
        poller = select.poll()
        for fd in fds:
            poller.register(fd, 0)  # no event asked for: poll() still reports hang-ups and errors
        while True:
            try:
                ready = poller.poll()
            except InterruptedError:
                continue
            gone = [fd for fd, events in ready if events & _GONE]
            for fd, events in ready:
                if events & select.POLLNVAL:  # closed in this process: not a hang-up
                    poller.unregister(fd)
            if gone:
                _point_at_devnull(gone)
                self.leave()
                return

    def end_by_deadline(self) -> None:
        """On a thread of its own: SIGTERM to our children now; at the deadline, if the process is still
        here, SIGKILL to everything below it and the end."""
        started = time.monotonic()
        _signal_all(_children(recursive=False), psutil.Process.terminate)
        time.sleep(max(0.0, EXIT_DEADLINE_S - (time.monotonic() - started)))
        left = _children(recursive=True)
        _signal_all(left, psutil.Process.kill)
        psutil.wait_procs(left, timeout=0.1)  # reaps those that are ours
        os._exit(self.app.return_code or 0)


def _point_at_devnull(fds: list[int]) -> None:
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in fds:
            os.dup2(devnull, fd)
        os.close(devnull)


def _children(recursive: bool) -> list[psutil.Process]:
    try:
        return psutil.Process().children(recursive=recursive)
    except psutil.Error:
        return []


def _signal_all(processes: list[psutil.Process], send: Callable[[psutil.Process], None]) -> None:
    for process in processes:
        with contextlib.suppress(psutil.Error):
            send(process)
