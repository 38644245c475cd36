"""Repaints painted straight to the compositor (ui/frame.py) put on the terminal exactly what a fresh render
of the same data shows, and anything else (another screen on top, a layout) still goes Textual's own way."""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Callable

from rich.segment import ControlType
from textual.strip import Strip

from ui.sample_states import FROZEN_TIME, gpu_state, host_state, jobs_state, rank, steps
from xfertop.ui.app import XfertopApp
from xfertop.ui.lines import LineView
from xfertop.ui.messages import GpuStateUpdated, HostStateUpdated, JobsStateUpdated
from xfertop.ui.quiet import QuietRender
from xfertop.ui.sources_bundle import Sources
from xfertop.ui.table_rows import CellCachedTable

Cell = tuple[str, object]


class _Terminal:
    """The cells a terminal shows after the updates the app wrote (full and partial)."""

    def __init__(self, app: XfertopApp) -> None:
        self.cells: list[list[Cell]] = []
        self.updates = 0
        #: Rows any update wrote to.
        self.rows_written: set[int] = set()
        self._written = asyncio.Event()
        write = app._display

        def display(screen, update) -> None:  # type: ignore[no-untyped-def]
            if update is not None and screen is app.screen:
                self._apply(app, update)
            write(screen, update)

        app._display = display  # type: ignore[method-assign]

    def _apply(self, app: XfertopApp, update: object) -> None:
        width, height = app.size
        if len(self.cells) != height:
            self.cells = [[(" ", None)] * width for _ in range(height)]
        self.updates += 1
        self._written.set()
        x = y = 0
        console = app.console
        for segment in update.__rich_console__(console, console.options):  # type: ignore[attr-defined]
            if segment.control:
                for code, *params in segment.control:
                    if code == ControlType.CURSOR_MOVE_TO:
                        x, y = params
                continue
            if segment.text == "\n":
                continue
            self.rows_written.add(y)
            for character in segment.text:
                self.cells[y][x] = (character, segment.style)
                x += 1


    def row_text(self, y: int) -> str:
        return "".join(character for character, _ in self.cells[y])

    async def wait_until(self, shown: Callable[[], bool], timeout_s: float = 5.0) -> None:
        """Until ``shown()`` holds, checked after each update written (Textual's own way paints on its
        screen's update timer, a little after the messages were handled)."""
        while not shown():
            self._written.clear()
            await asyncio.wait_for(self._written.wait(), timeout_s)


def _cells(strips: list[Strip]) -> list[list[Cell]]:
    return [[(character, segment.style) for segment in strip for character in segment.text]
            for strip in strips]


def _fresh_screen(app: XfertopApp) -> list[list[Cell]]:
    """What the screen shows when every widget renders its lines from scratch."""
    screen = app.screen
    for widget in [screen, *screen.walk_children()]:
        widget._styles_cache.clear()
        if isinstance(widget, QuietRender):
            widget._quiet_last = None
        if isinstance(widget, LineView):
            widget._lines = None
        if isinstance(widget, CellCachedTable):
            widget._cell_segments.clear()
            widget._row_render_cache.clear()
            widget._line_cache.clear()
    return _cells(screen._compositor.render_strips())


def _differences(terminal: _Terminal, app: XfertopApp) -> list[int]:
    fresh = _fresh_screen(app)
    return [y for y, (shown, wanted) in enumerate(zip(terminal.cells, fresh, strict=True)) if shown != wanted]


def _round(app: XfertopApp, i: int) -> None:
    wave = 1 + math.sin(i)
    newer = dataclasses.replace(rank(), steps=steps(count=60 + i, wait_ms=41.0 * wave))
    app.post_message(HostStateUpdated(dataclasses.replace(host_state(), cpu_percent=30.0 + i)))
    app.post_message(JobsStateUpdated(jobs_state(newer)))
    app.post_message(GpuStateUpdated(gpu_state(2, rx=27e9 * wave, util=40 * wave)))


async def test_repaints_written_straight_to_the_terminal_show_what_a_fresh_render_shows() -> None:
    app = XfertopApp(Sources(), start_sources=False, clock=lambda: FROZEN_TIME)
    terminal = _Terminal(app)
    async with app.run_test(size=(160, 48)) as pilot:
        _round(app, 0)
        await pilot.pause()
        assert _differences(terminal, app) == []
        painted = app.frame.painted
        for i in range(1, 6):
            _round(app, i)
            await pilot.pause()
            assert _differences(terminal, app) == [], f"round {i}"
        assert app.frame.painted >= painted + 5, "the repaints did not take the direct way"
        await pilot.press("tab", "tab", "tab", "down")  # focus and cursor move (Textual's way) in between
        _round(app, 7)
        await pilot.pause()
        assert _differences(terminal, app) == []


async def test_with_a_detail_screen_on_top_repaints_go_textuals_way_and_the_main_screen_comes_back() -> None:
    app = XfertopApp(Sources(), start_sources=False, clock=lambda: FROZEN_TIME)
    terminal = _Terminal(app)
    async with app.run_test(size=(160, 48)) as pilot:
        _round(app, 0)
        await pilot.pause()
        app.gpu_area.query_one("GpuPane").focus()
        await pilot.press("enter")
        await pilot.pause()
        assert len(app.screen_stack) == 2
        painted, updates = app.frame.painted, terminal.updates
        for i in range(1, 4):
            _round(app, i)
            await pilot.pause()
        assert app.frame.painted == painted
        assert terminal.updates > updates  # the detail screen's live parts still follow the data
        await pilot.press("escape")
        await pilot.pause()
        assert len(app.screen_stack) == 1
        assert _differences(terminal, app) == []
        _round(app, 5)
        await pilot.pause()
        assert _differences(terminal, app) == []
        assert app.frame.painted > painted


async def test_unchanged_snapshots_write_only_the_gpu_lines_whose_charts_moved() -> None:
    app = XfertopApp(Sources(), start_sources=False, clock=lambda: FROZEN_TIME)
    terminal = _Terminal(app)
    async with app.run_test(size=(160, 48)) as pilot:
        for i in (0, 1, 1):
            _round(app, i)
            await pilot.pause()
        terminal.rows_written.clear()
        for _ in range(3):  # the very same host and job snapshots; each GPU sample moves the charts
            _round(app, 1)
            await pilot.pause()
        gpu_rows = set(app.gpu_area.region.line_range)
        assert terminal.rows_written and terminal.rows_written <= gpu_rows
        assert _differences(terminal, app) == []
        _round(app, 2)  # new figures everywhere
        await pilot.pause()
        table_rows = {*app.process_table.region.line_range, *app.jobs_pane.region.line_range}
        assert table_rows & terminal.rows_written


async def test_a_column_that_must_grow_is_measured_once_and_then_rows_update_in_place_again() -> None:
    """A wider COMMAND widens its column: the table's own idle handler measures it (that refresh goes
    Textual's way); the next frames write only the changed rows again, the command shown whole."""
    app = XfertopApp(Sources(), start_sources=False, clock=lambda: FROZEN_TIME)
    terminal = _Terminal(app)
    async with app.run_test(size=(160, 48)) as pilot:
        _round(app, 0)
        await pilot.pause()
        longer = "python train.py --epochs 3 --data /datasets/imagenet/train --workers 8"
        gpus = gpu_state(2)
        process = dataclasses.replace(gpus.gpus[0].processes[0], command=longer)
        gpus = dataclasses.replace(gpus, gpus=(dataclasses.replace(gpus.gpus[0], processes=(process,)),
                                               *gpus.gpus[1:]))
        app.post_message(HostStateUpdated(host_state()))
        app.post_message(GpuStateUpdated(gpus))
        await pilot.pause()
        table = app.process_table
        row_y = table.region.y + 2  # below the border and the header
        await terminal.wait_until(lambda: longer in terminal.row_text(row_y))
        assert _differences(terminal, app) == []
        terminal.rows_written.clear()
        busier = dataclasses.replace(host_state(), processes=(
            dataclasses.replace(host_state().processes[0], cpu_percent=181.0),))
        app.post_message(HostStateUpdated(busier))
        app.post_message(GpuStateUpdated(gpus))
        await pilot.pause()
        table_rows = set(table.region.line_range)
        assert terminal.rows_written & table_rows == {row_y}
        assert _differences(terminal, app) == []
