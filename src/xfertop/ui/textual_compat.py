"""The one place xfertop leans on Textual's internals: its Linux driver, made to let go of a terminal that
went away, with an input thread that sleeps until a key comes.

Written against Textual 8.2 (``SUPPORTED_MAJOR``): on any other major version, or where the internals it
reads are missing, ``driver_class_for`` hands back Textual's own driver and nothing here runs (a viewer
that then loses its terminal still leaves by ui/terminal_watch.py's deadline). The private names used:
``LinuxDriver._file`` (the writer thread's file), ``LinuxDriver._debug``, ``textual._xterm_parser``
(``XTermParser``, its ``_timeout_time``, a deadline on Textual's clock: ``time.monotonic`` on Linux).

**A terminal that goes away** (a dropped SSH session, ``tmux kill-session``). The kernel hangs the
terminal up: reads give end of file, writes fail with EIO, and the session leader gets SIGHUP and then
SIGCONT. Textual 8.2.8's driver (``linux_driver.py``) mishandles that, and xfertop, which leaves on
SIGHUP instead of dying of it (ui/terminal_watch.py), would hang in about half the hang-ups:

- Its SIGCONT handler resumes the application mode whether or not it was ever suspended: on the dead
  terminal it starts a second writer thread and a second input thread. ``resume_application_mode`` here
  resumes only after ``suspend_application_mode`` (Ctrl+Z, ``App.suspend``).
- Its writer thread dies on the first failed write (EIO), leaving its bounded queue (30 writes) unread:
  the 31st write, or the ``None`` that stops it on exit, blocks the app for good (``Queue.put`` <-
  ``WriterThread.stop`` <- ``close``). The writer here writes through ``TerminalOutput``, which drops
  the output once the terminal fails. Textual keeps that file in the private ``LinuxDriver._file``: where
  a Textual without it runs this code, Textual's own writer is left as it is.

**Input without ticks.** Textual's input thread waits for input with ``select(0.1)``: it wakes ten times a
second to run the key parser's timeout check (a lone ESC becomes the Escape key once no more bytes follow
within the parser's timeout), whether or not anything is pending. For a monitor that sits idle for hours
that is 10 wake-ups a second, measured at 0.13-0.17% of a core on its own, a sixth of xfertop's whole CPU
at 1 Hz (docs/ui.md). This loop waits with a timeout only while the parser waits for one (until its
deadline); otherwise it blocks. Stopping the thread (``exit_event.set()``, as Textual's ``disable_input``
does on exit and on suspend) makes a pipe the thread selects on readable until the event is cleared, so
every thread waiting on it wakes (a byte, read by one, would wake only that one: with the second input
thread above, the other would sleep on and ``disable_input`` join it forever). A terminal at end of
file, or whose read fails, is not polled again (Textual's loop spins on it). The parser's deadline is
Textual's private ``Parser._timeout_time``: where a Textual without it runs this code, the thread falls
back to Textual's own 0.1 s ticks.
"""

from __future__ import annotations

import contextlib
import os
import select
import selectors
import signal
import sys
import threading
import time
from codecs import getincrementaldecoder
from typing import TextIO

import textual
from textual.driver import Driver
from textual.drivers.linux_driver import LinuxDriver

try:  # a private module: where it moved, Textual's own driver is used (driver_class_for)
    from textual._xterm_parser import XTermParser
except ImportError:  # pragma: no cover - another Textual
    XTermParser = None  # type: ignore[assignment,misc]

#: The Textual major version this module was written and tested against.
SUPPORTED_MAJOR = 8

#: Textual's own tick, used when the parser's deadline cannot be read.
FALLBACK_TICK_S = 0.1
#: Ctrl+Z and the return to the foreground, which Textual's driver handles while the app runs.
_SUSPEND_SIGNALS = (signal.SIGTSTP, signal.SIGCONT)


def supported(version: str = textual.__version__) -> bool:
    """Whether this Textual is one the driver below was written against (and its internals are there)."""
    major = version.split(".", 1)[0]
    return (
        major.isdigit()
        and int(major) == SUPPORTED_MAJOR
        and XTermParser is not None
        and hasattr(XTermParser(False), "_timeout_time")
        and "_file" in LinuxDriver.__init__.__code__.co_names
    )


def driver_class_for(textual_choice: type[Driver]) -> type[Driver]:
    """``QuietLinuxDriver`` where Textual would pick its own Linux driver and this Textual is supported;
    Textual's choice otherwise (another platform or version, or a driver named by TEXTUAL_DRIVER)."""
    from textual import constants

    if constants.DRIVER is None and textual_choice is LinuxDriver and supported():
        return QuietLinuxDriver
    return textual_choice


#: How long a write waits for a full terminal to take more before it tries again.
FULL_TERMINAL_WAIT_S = 1.0


class TerminalOutput:
    """The file Textual's writer thread draws through: writes to the terminal until a write fails
    (EIO: the terminal hung up), then drops everything, so that the thread lives on and keeps emptying
    its queue.

    A full terminal is no failure: where another program sharing the terminal made it non-blocking, a
    slow link gives EAGAIN, and the rest is written once the terminal takes it (dropping from then on
    would freeze the screen of a live viewer, with no hang-up to make it leave). So the bytes go straight
    to the descriptor: a buffered file that meets EAGAIN keeps only part of what it was given.
    """

    def __init__(self, file: TextIO) -> None:
        self.file = file
        self.failed = False
        self._encoding = getattr(file, "encoding", None) or "utf-8"
        try:
            file.flush()  # whatever it holds goes first; from here on nothing is buffered
            self._fd = file.fileno()
        except (OSError, ValueError):
            self.failed = True

    def write(self, text: str) -> None:
        if self.failed:
            return
        data = memoryview(text.encode(self._encoding, errors="replace"))
        while data:
            try:
                data = data[os.write(self._fd, data) :]
            except BlockingIOError:
                try:
                    select.select([], [self._fd], [], FULL_TERMINAL_WAIT_S)
                except (OSError, ValueError):
                    self.failed = True
                    return
            except OSError:
                self.failed = True
                return

    def flush(self) -> None:
        """Nothing is buffered here."""

    def fileno(self) -> int:
        return self.file.fileno()


class _WakingEvent(threading.Event):
    """An Event that keeps a pipe readable while it is set: whoever selects on the pipe wakes."""

    def __init__(self, wake_read: int, wake_write: int) -> None:
        super().__init__()
        self.wake_read, self.wake_write = wake_read, wake_write

    def set(self) -> None:
        super().set()
        with contextlib.suppress(OSError):  # full pipe: it is readable anyway; closed: exiting
            os.write(self.wake_write, b"x")

    def clear(self) -> None:
        super().clear()
        with contextlib.suppress(OSError):  # BlockingIOError: drained; closed: exiting
            while os.read(self.wake_read, 512):
                pass


_UNKNOWN = object()


def parser_timeout(parser: XTermParser, now: float) -> float | None:
    """Seconds until the parser's pending timeout (0 when due), None when nothing is pending."""
    deadline = getattr(parser, "_timeout_time", _UNKNOWN)
    if deadline is None:
        return None
    if not isinstance(deadline, int | float):  # not the Textual this was written against: tick as it does
        return FALLBACK_TICK_S
    return max(0.0, deadline - now)


class QuietLinuxDriver(LinuxDriver):
    def __init__(self, *args, **kwargs) -> None:
        # Textual sets handlers for these in __init__ and never puts the old ones back: after the app, a
        # hang-up's SIGCONT raised "no running event loop" into whatever the program did next.
        self.previous_handlers = {signum: signal.getsignal(signum) for signum in _SUSPEND_SIGNALS}
        super().__init__(*args, **kwargs)
        wake_read, wake_write = os.pipe()
        os.set_blocking(wake_read, False)
        os.set_blocking(wake_write, False)
        self.exit_event = self.waking_exit_event = _WakingEvent(wake_read, wake_write)
        self.application_suspended = False
        if getattr(self, "_file", None) is sys.__stderr__ and sys.__stderr__ is not None:
            # Read by start_application_mode's WriterThread, which only writes and flushes it.
            self._file = TerminalOutput(sys.__stderr__)  # type: ignore[assignment]

    def suspend_application_mode(self) -> None:
        self.application_suspended = True
        super().suspend_application_mode()

    def resume_application_mode(self) -> None:
        """Resume after a suspension only: a SIGCONT that comes with a hang-up must not start the
        application mode again on the dead terminal."""
        if self.application_suspended:
            self.application_suspended = False
            super().resume_application_mode()

    def run_input_thread(self) -> None:
        """Textual's loop (linux_driver.py), waiting on the parser's deadline instead of 0.1 s ticks."""
        selector = selectors.SelectSelector()
        fileno, wake = self.fileno, self.waking_exit_event.wake_read
        selector.register(fileno, selectors.EVENT_READ)
        selector.register(wake, selectors.EVENT_READ)
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode
        terminal_open = True

        def read_terminal() -> bytes:
            """The next bytes typed; b"" at end of input (hung up, stdin closed), which stops the
            polling."""
            nonlocal terminal_open
            try:
                raw = os.read(fileno, 1024 * 4)
            except OSError:  # EIO: the terminal is gone
                raw = b""
            if not raw:
                selector.unregister(fileno)
                terminal_open = False
            return raw

        def process(events: list, final: bool = False) -> None:
            for key, mask in events:
                if key.fd != wake and mask & selectors.EVENT_READ and (raw := read_terminal()):
                    # "" for the first bytes of a character split across reads: the rest comes next.
                    for event in parser.feed(decode(raw, final=final)):
                        self.process_message(event)
            for event in parser.tick():
                self.process_message(event)

        try:
            while not self.exit_event.is_set():
                process(selector.select(parser_timeout(parser, time.monotonic())))
            if terminal_open:
                selector.unregister(fileno)
            selector.unregister(wake)
            process(selector.select(FALLBACK_TICK_S), final=True)
        finally:
            selector.close()
            with contextlib.suppress(Exception):
                for _event in parser.feed(""):
                    pass

    def close(self) -> None:
        """On exit; also on suspend, where the wake pipe stays and the suspend signals stay handled."""
        super().close()
        if self.application_suspended:
            return
        for signum, handler in self.previous_handlers.items():
            with contextlib.suppress(ValueError, TypeError):  # not the main thread; not set from Python
                signal.signal(signum, handler)
        for fd in (self.waking_exit_event.wake_read, self.waking_exit_event.wake_write):
            with contextlib.suppress(OSError):
                os.close(fd)
