"""Leave quietly when the terminal goes away (a dropped SSH session), instead of spinning or dumping a
traceback into a dead terminal."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys

from textual.app import App

#: How often to check that stdin is still a terminal.
CHECK_INTERVAL_S = 5.0


def stdin_is_terminal() -> bool:
    try:
        return os.isatty(sys.stdin.fileno())
    except (ValueError, OSError):
        return False


def watch_terminal(app: App) -> None:
    """Exit ``app`` on SIGHUP, or at the next check once stdin is no longer a terminal."""
    # Where signals cannot be handled (not the main thread, another platform) the check below still works.
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, app.exit)

    def exit_if_gone() -> None:
        if not stdin_is_terminal():
            app.exit()

    app.set_interval(CHECK_INTERVAL_S, exit_if_gone)
