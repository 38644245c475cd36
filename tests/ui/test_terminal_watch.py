"""A dropped SSH session: once stdin is no longer a terminal, the app exits by itself."""

from __future__ import annotations

import asyncio

import pytest

from xfertop.ui import terminal_watch
from xfertop.ui.app import XfertopApp
from xfertop.ui.sources_bundle import Sources


async def test_app_stays_while_the_terminal_is_there_and_exits_once_it_goes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(terminal_watch, "CHECK_INTERVAL_S", 0.02)
    app = XfertopApp(Sources(), start_sources=False)
    exits: list[int] = []
    exited = asyncio.Event()
    checks = 0

    def terminal_for_three_checks() -> bool:
        nonlocal checks
        checks += 1
        return checks <= 3

    def record_exit(*_args: object, **_kwargs: object) -> None:
        exits.append(checks)
        exited.set()

    async with app.run_test():
        monkeypatch.setattr(app, "exit", record_exit)
        monkeypatch.setattr(terminal_watch, "stdin_is_terminal", terminal_for_three_checks)
        terminal_watch.watch_terminal(app)
        await asyncio.wait_for(exited.wait(), timeout=5)
    assert exits[0] == 4, "exited before the terminal went away, or did not notice it go"
