"""The screen keeps its meaning without colour: the breakdown bar and its legend in letters, NO_COLOR
respected, a monochrome key, and the theme and monochrome choices kept between runs."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
from textual.filter import Monochrome

from ui.sample_states import FROZEN_TIME, gpu_state, host_state, jobs_state
from ui.screen_text import screen_text
from xfertop.sources.bundle import Sources
from xfertop.ui.app import XfertopApp
from xfertop.ui.messages import GpuStateUpdated, HostStateUpdated, JobsStateUpdated


def _app() -> XfertopApp:
    return XfertopApp(Sources(), start_sources=False, clock=lambda: FROZEN_TIME)


async def _fed(app: XfertopApp, pilot) -> None:
    for i in range(60):
        sample = gpu_state(1, rx=27e9 * (1 + math.sin(i / 6)))
        app.view.apply_gpu(dataclasses.replace(sample, timestamp=FROZEN_TIME - 60 + i))
    app.post_message(GpuStateUpdated(gpu_state(1)))
    app.post_message(HostStateUpdated(host_state()))
    app.post_message(JobsStateUpdated(jobs_state()))
    await pilot.pause()


async def test_a_plain_text_capture_keeps_the_bar_and_its_legend_in_letters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        await _fed(app, pilot)
        assert app.no_color  # Textual's own NO_COLOR filter is on
        [row] = [row for row in screen_text(app) if row.startswith(" train.py  0/1")]
        bar = row.split()[4]
        # The sample rank's host step: ~42% wait, ~9% copy, the rest model (under watch(): no loop part).
        assert len(bar) == 16 and set(bar) == {"W", "C", "M"}, bar
        assert bar.count("W") == 7 and bar.count("C") == 1 and bar.count("M") == 8, bar
        assert bar.index("W") < bar.index("C") < bar.index("M"), "wait, then copy, then model"
        app.query_one("#ranks").focus()
        await pilot.press("enter")
        await pilot.pause()
        detail = "\n".join(screen_text(app))
        assert "W wait  L loop  C copy  M model  S sync" in detail


async def test_m_turns_monochrome_on_and_the_next_run_remembers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        await _fed(app, pilot)
        assert not any(isinstance(f, Monochrome) for f in app.get_line_filters())
        await pilot.press("m")
        await pilot.pause()
        assert any(isinstance(f, Monochrome) for f in app.get_line_filters())
        assert "monochrome" in screen_text(app)[0]
        app.theme = "nord"
        await pilot.pause()
    saved = json.loads((tmp_path / "xfertop" / "config.json").read_text())
    assert saved["monochrome"] is True and saved["theme"] == "nord"
    again = _app()
    async with again.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert again.monochrome and again.theme == "nord"
        assert any(isinstance(f, Monochrome) for f in again.get_line_filters())


async def test_an_unreadable_config_file_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    (tmp_path / "xfertop").mkdir()
    (tmp_path / "xfertop" / "config.json").write_text("{not json")
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert not app.monochrome and app.jobs_pane.fold_s == 30.0
