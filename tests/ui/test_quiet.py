"""Widgets that return their last lines to the compositor (ui/quiet.py) never return stale ones: after data
updates, focus moves and a resize, what each hands over equals what it renders from scratch."""

from __future__ import annotations

import dataclasses
import math

from textual.strip import Strip

from ui.sample_states import FROZEN_TIME, TRAIN_PID, gpu_state, host_state, jobs_state, rank
from xfertop.ui.app import XfertopApp
from xfertop.ui.messages import GpuStateUpdated, HostStateUpdated, JobsStateUpdated
from xfertop.ui.quiet import QuietRender
from xfertop.ui.sources_bundle import Sources


def _look(strips: list[Strip]) -> list[list[tuple[str, object]]]:
    return [[(segment.text, segment.style) for segment in strip] for strip in strips]


def _assert_not_stale(app: XfertopApp) -> int:
    quiet = [widget for widget in [app.screen, *app.screen.walk_children()]
             if isinstance(widget, QuietRender) and widget.region.area]
    for widget in quiet:
        region = widget.region.reset_offset
        handed = widget.render_lines(region)
        widget._quiet_last = None
        widget._styles_cache.clear()
        assert _look(handed) == _look(widget.render_lines(region)), widget
    return len(quiet)


async def test_quiet_widgets_hand_over_what_they_would_render() -> None:
    app = XfertopApp(Sources(), start_sources=False, clock=lambda: FROZEN_TIME)
    async with app.run_test(size=(160, 48)) as pilot:
        app.post_message(GpuStateUpdated(gpu_state(1)))
        app.post_message(HostStateUpdated(host_state()))
        app.post_message(JobsStateUpdated(jobs_state()))
        await pilot.pause()
        assert _assert_not_stale(app) >= 8
        for i in range(3):
            wave = 1 + math.sin(i)
            app.post_message(GpuStateUpdated(gpu_state(1, rx=27e9 * wave, util=40 * wave)))
            app.post_message(HostStateUpdated(host_state(cores=16 + i)))
            app.post_message(JobsStateUpdated(jobs_state(*(rank(rank_index=r, world=i + 1)
                                                           for r in range(i + 1)))))
            await pilot.pause()
            _assert_not_stale(app)
            await pilot.press("tab")  # the focus (and the cursor's and panes' look) moves
            await pilot.pause()
            _assert_not_stale(app)
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        _assert_not_stale(app)


async def test_a_changed_row_is_the_only_row_rendered_again_and_the_rest_are_handed_over_as_before() -> None:
    app = XfertopApp(Sources(), start_sources=False, clock=lambda: FROZEN_TIME)
    async with app.run_test(size=(160, 48)) as pilot:
        app.post_message(GpuStateUpdated(gpu_state(1)))
        app.post_message(HostStateUpdated(host_state()))
        app.post_message(JobsStateUpdated(jobs_state()))
        await pilot.pause()
        table = app.process_table
        region = table.region.reset_offset
        handed = table.render_lines(region)
        rendered: list[tuple[int, int]] = []
        cache = table._styles_cache
        render_widget = cache.render_widget

        def recording(widget, crop):  # type: ignore[no-untyped-def]
            rendered.append((crop.y, crop.height))
            return render_widget(widget, crop)

        cache.render_widget = recording  # type: ignore[method-assign]
        busier = dataclasses.replace(host_state(), processes=(
            dataclasses.replace(host_state().processes[0], cpu_percent=180.0),))
        app.post_message(HostStateUpdated(busier))
        app.post_message(GpuStateUpdated(gpu_state(1)))
        await pilot.pause()
        row_y = table.get_row_index(str(TRAIN_PID)) + 2  # below the border and the header
        assert rendered == [(row_y, 1)]
        again = table.render_lines(region)
        changed = [y for y, (old, new) in enumerate(zip(handed, again, strict=True)) if old is not new]
        assert changed == [row_y]
        assert "180" in again[row_y].text
        _assert_not_stale(app)
