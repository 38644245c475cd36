"""Line-by-line panes (ui/lines.py): painted as Textual's own pipeline paints the same Text, and only the
rows whose text changed are repainted."""

from __future__ import annotations

import asyncio
import math
import time

from rich.style import Style as RichStyle
from rich.text import Text
from textual.app import App, ComposeResult
from textual.content import Content
from textual.geometry import Region
from textual.strip import Strip
from textual.visual import Visual

from ui.sample_states import FROZEN_TIME, gpu_state, host_state, jobs_state
from xfertop.ui.app import XfertopApp
from xfertop.ui.gpu_pane import GpuPane
from xfertop.ui.jobs_pane import verdict_text
from xfertop.ui.lines import LineView, StripStyles, text_strip
from xfertop.ui.messages import GpuStateUpdated, HostStateUpdated, JobsStateUpdated
from xfertop.ui.sources_bundle import Sources


def _cells(strip: Strip) -> list[tuple[str, RichStyle | None]]:
    """Each cell's character and look (the style without its meta: Textual adds offsets for selection)."""
    cells = []
    for segment in strip:
        style = segment.style
        look = None if style is None else RichStyle(
            color=style.color, bgcolor=style.bgcolor, bold=style.bold, dim=style.dim, italic=style.italic,
            underline=style.underline, reverse=style.reverse, strike=style.strike)
        cells.extend((char, look) for char in segment.text)
    return cells


def _textual_strip(widget, line: Text, width: int) -> Strip:
    content = Content.from_rich_text(line, console=widget.app.console)
    return Visual.to_strips(widget, content, width, 1, widget.visual_style)[0]


async def test_lines_paint_as_textuals_own_pipeline() -> None:
    app = XfertopApp(Sources(), start_sources=False, clock=lambda: FROZEN_TIME)
    async with app.run_test(size=(160, 48)) as pilot:
        for i in range(120):
            app.view.apply_gpu(gpu_state(1, rx=27e9 * (1 + math.sin(i / 6)), util=40 * (1 + math.sin(i / 6))))
        app.post_message(GpuStateUpdated(gpu_state(1, gen=3)))
        app.post_message(HostStateUpdated(host_state()))
        app.post_message(JobsStateUpdated(jobs_state()))
        await pilot.pause()
        pane = app.query_one(GpuPane)
        extra = [Text("3 gone", style="dim"), Text("x", style="bold red on blue"),
                 Text.assemble(("a", "green"), ("b", "dim"), "c"), Text(""), Text("é…⚠ wide ✓")]
        for focused in (False, True):
            if focused:
                pane.focus()
                await pilot.pause()
            lines = [(pane, line) for line in [*pane.render().split("\n"), *extra]]
            lines += [(app.host_pane, line) for line in app.host_pane.render().split("\n")]
            lines += [(app.header_bar, line) for line in app.header_bar.render().split("\n")]
            verdicts = verdict_text(app.view.jobs, 150, app.view.gpu)
            lines += [(app.host_pane, line) for line in verdicts.split("\n")]
            styles = StripStyles()
            for widget, line in lines:
                width = widget.content_size.width
                mine = text_strip(widget, line, width, widget.visual_style, styles)
                assert _cells(mine) == _cells(_textual_strip(widget, line, width)), line.plain


class _Lines(LineView):
    def __init__(self) -> None:
        super().__init__()
        self.texts = ["one", "two", "three"]
        self.built = 0

    def build_lines(self, width: int) -> list[Text]:
        self.built += 1
        return [Text(text) for text in self.texts]


class _LinesApp(App[None]):
    def compose(self) -> ComposeResult:
        yield _Lines()


async def test_only_changed_rows_are_repainted() -> None:
    app = _LinesApp()
    async with app.run_test(size=(40, 10)) as pilot:
        view = app.query_one(_Lines)
        await pilot.pause()
        assert view.render_line(1).text == "two"
        marked: list[tuple[Region, ...]] = []
        set_dirty = view._set_dirty
        view._set_dirty = lambda *regions: (marked.append(regions), set_dirty(*regions))  # type: ignore[method-assign]
        view.update_lines()
        assert marked == [], "unchanged lines were repainted"
        view.texts = ["one", "2", "three", "four"]
        view.update_lines()
        assert [tuple(region.y for region in regions) for regions in marked] == [(1, 3)]
        assert [view.render_line(y).text for y in range(4)] == ["one", "2", "three", "four"]
        view._set_dirty = set_dirty  # type: ignore[method-assign]
        view.texts = ["ONE", "2", "three", "four"]
        view.refresh()  # a whole refresh rebuilds every line
        assert view.render_line(0).text == "ONE"


async def test_the_header_clock_costs_no_frame_or_wakeup_of_its_own_between_repaints() -> None:
    """Each repaint moves the clock and puts the clock's own update off past the next repaint (periods up
    to 1 s); with slower repaints, or none, the clock moves itself as each second begins. The header is
    rebuilt only when its second or its facts changed."""
    now = [1_796_000_000.2]
    app = XfertopApp(Sources(), start_sources=False, clock=lambda: now[0])
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        header = app.header_bar
        header.update_lines()
        built: list[int] = []
        build = header.build_lines
        moved = asyncio.Event()

        def counting_build(width: int) -> list:
            built.append(width)
            moved.set()
            return build(width)

        header.build_lines = counting_build  # type: ignore[method-assign]
        loop = asyncio.get_running_loop()

        def due_in() -> float:
            return header._tick._handle.when() - loop.time()  # type: ignore[union-attr]

        now[0] += 0.5  # the same second: nothing to rebuild
        header.update_lines()
        assert built == []
        assert 1.0 < due_in() <= 1.32  # past the next repaint at 1 Hz, which moves it again
        app.view.interval_s = 2.0
        header.update_lines()
        assert 0.2 < due_in() <= 0.31  # repaints every 2 s: the clock moves itself at the next second
        built.clear()  # (the period is in the header too)
        now[0] += 1.0
        header.tick()
        assert len(built) == 1
        assert time.strftime("%H:%M:%S", time.localtime(now[0])) in header.render_line(0).text
        now[0] = 1_796_000_002.995  # the next second begins in 5 ms: the clock's own update moves it
        header.tick()
        moved.clear()
        now[0] += 0.01
        await asyncio.wait_for(moved.wait(), 5.0)
        assert time.strftime("%H:%M:%S", time.localtime(now[0])) in header.render_line(0).text
