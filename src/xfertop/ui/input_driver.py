"""Textual's Linux driver with an input thread that sleeps until a key comes.

Textual 8.2.8's ``LinuxDriver.run_input_thread`` waits for terminal input with ``select(0.1)``: the
thread wakes ten times a second to run the key parser's timeout check (a lone ESC becomes the Escape key
once no more bytes follow within the parser's timeout), whether or not anything is pending. For a
monitor that sits idle for hours that is 10 wake-ups a second, measured at 0.13-0.17% of a core on its
own, a sixth of xfertop's whole CPU at 1 Hz (docs/ui.md).

``QuietLinuxDriver`` runs the same loop with a timeout only while the parser waits for one (until its
deadline); otherwise it blocks. Stopping the thread (``exit_event.set()``, as Textual's
``disable_input`` does on exit and on suspend) wakes it through a self-pipe. A terminal that reports end
of file (stdin closed) is no longer polled at all: the original loop spun on it. The parser's deadline
is Textual's private ``Parser._timeout_time``: where a Textual without it runs this code, the thread
falls back to Textual's own 0.1 s ticks.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import threading
from codecs import getincrementaldecoder

from textual._time import get_time
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver

#: Textual's own tick, used when the parser's deadline cannot be read.
FALLBACK_TICK_S = 0.1


class _WakingEvent(threading.Event):
    """An Event whose ``set()`` also writes a byte to a pipe the input thread selects on."""

    def __init__(self, wake_fd: int) -> None:
        super().__init__()
        self._wake_fd = wake_fd

    def set(self) -> None:
        super().set()
        with contextlib.suppress(OSError):  # full pipe: a wake-up is pending anyway; closed: exiting
            os.write(self._wake_fd, b"x")


_UNKNOWN = object()


def parser_timeout(parser: XTermParser, now: float) -> float | None:
    """Seconds until the parser's pending timeout (0 when due), None when nothing is pending."""
    deadline = getattr(parser, "_timeout_time", _UNKNOWN)
    if deadline is None:
        return None
    if deadline is _UNKNOWN:  # not the Textual this was written against: tick as it does
        return FALLBACK_TICK_S
    return max(0.0, deadline - now)


class QuietLinuxDriver(LinuxDriver):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        os.set_blocking(self._wake_write, False)
        self.exit_event = _WakingEvent(self._wake_write)

    def run_input_thread(self) -> None:
        """Textual's loop (linux_driver.py), waiting on the parser's deadline instead of 0.1 s ticks."""
        selector = selectors.SelectSelector()
        fileno, wake = self.fileno, self._wake_read
        selector.register(fileno, selectors.EVENT_READ)
        selector.register(wake, selectors.EVENT_READ)
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode
        terminal_open = True

        def drain_wake_pipe() -> None:
            with contextlib.suppress(BlockingIOError):
                while os.read(wake, 512):
                    pass

        def process(events: list, final: bool = False) -> None:
            nonlocal terminal_open
            for key, mask in events:
                if key.fd == wake:
                    drain_wake_pipe()
                elif mask & selectors.EVENT_READ:
                    raw = os.read(fileno, 1024 * 4)
                    if not raw:  # end of file (stdin piped or closed): stop polling it
                        selector.unregister(fileno)
                        terminal_open = False
                        continue
                    # "" for the first bytes of a character split across reads: the rest comes next.
                    for event in parser.feed(decode(raw, final=final)):
                        self.process_message(event)
            for event in parser.tick():
                self.process_message(event)

        try:
            while not self.exit_event.is_set():
                process(selector.select(parser_timeout(parser, get_time())))
            if terminal_open:
                selector.unregister(fileno)
            process(selector.select(FALLBACK_TICK_S), final=True)
        finally:
            selector.close()
            with contextlib.suppress(Exception):
                for _event in parser.feed(""):
                    pass

    def close(self) -> None:
        super().close()
        for fd in (self._wake_read, self._wake_write):
            with contextlib.suppress(OSError):
                os.close(fd)
