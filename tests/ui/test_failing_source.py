"""A source whose samples keep raising (a bug, not an expected failure such as a missing driver) leaves
its panes on its last good sample: the header says which source, since when and why, until it recovers."""

from __future__ import annotations

import asyncio
import threading

from textual.pilot import Pilot

from ui.live import BreakableHostSource
from xfertop.sources.bundle import Sources
from xfertop.ui.app import XfertopApp


async def _header_after(app: XfertopApp, pilot: Pilot, event: threading.Event) -> list[str]:
    assert await asyncio.to_thread(event.wait, 10), "the source never got there"
    app.header_bar.update_lines()
    await pilot.pause()
    return [line.plain for line in app.header_bar.lines]


async def test_a_failing_source_is_named_in_the_header_until_it_recovers() -> None:
    host = BreakableHostSource()
    app = XfertopApp(Sources(host=host), interval_s=1.0)
    async with app.run_test(size=(160, 40)) as pilot:
        assert await asyncio.to_thread(host.wait_for_sample, 10) is not None
        host.broken.set()
        lines = await _header_after(app, pilot, host.failed)
        (failure,) = lines[1:]
        assert failure.startswith(" host sampling fails since ")
        assert "(KeyError: 'cpu7'): its figures are from its last good sample" in failure
        assert app.header_bar.size.height == 2
        host.broken.clear()
        lines = await _header_after(app, pilot, host.recovered)
        assert len(lines) == 1, lines


async def test_a_source_that_never_sampled_says_it_has_no_figures() -> None:
    host = BreakableHostSource()
    host.broken.set()
    app = XfertopApp(Sources(host=host), interval_s=1.0)
    async with app.run_test(size=(80, 24)) as pilot:
        lines = await _header_after(app, pilot, host.failed)
        assert lines[1].startswith(" host sampling fails since ")
        assert lines[1].endswith(" (KeyError: 'cpu7'): no figures yet"), lines[1]
