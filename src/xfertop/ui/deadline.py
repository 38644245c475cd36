"""A one-shot call at a time that can be moved later for free.

A Textual ``Timer`` that is ``reset()`` still wakes the event loop when its old time comes, only to see it
was reset and sleep again; each wake costs the main thread about as much as painting a changed line. A
``Deadline`` moved before it is due cancels its asyncio handle instead: a cancelled handle is dropped
without waking the loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from textual.app import App


class Deadline:
    """Calls ``callback`` once, ``delay_s`` after the last ``set``; errors go to the app, as a timer's do."""

    def __init__(self, app: App[Any], callback: Callable[[], None]) -> None:
        self._app = app
        self._callback = callback
        self._handle: asyncio.TimerHandle | None = None

    @property
    def pending(self) -> bool:
        return self._handle is not None

    def set(self, delay_s: float) -> None:
        """(Re)arm: the call comes ``delay_s`` from now, and not at the time set before."""
        if self._handle is not None:
            self._handle.cancel()
        self._handle = asyncio.get_running_loop().call_later(delay_s, self._fire)

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _fire(self) -> None:
        self._handle = None
        try:
            self._callback()
        except Exception as error:  # as Textual's Timer: the app shows it and exits
            self._app._handle_exception(error)
