"""The real app with the real GPU and host sources; only NVML is faked, by a recorded H200."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from fakes.fake_pynvml import FakePynvml
from ui.live import MessageWaiter, fake_gpu_source, gpu_update_where, live_app
from xfertop.sources.bundle import HOST_MIN_INTERVAL_S, JOBS_INTERVAL_S, Sources
from xfertop.sources.host.source import HostSource
from xfertop.sources.jobs.source import JobsSource
from xfertop.ui.app import XfertopApp
from xfertop.ui.gpu_area import GpuArea
from xfertop.ui.gpu_detail import GpuDetailScreen
from xfertop.ui.gpu_pane import GpuPane
from xfertop.ui.header import HeaderBar
from xfertop.ui.help_screen import HelpScreen


def _rendered(widget) -> str:
    return str(widget.render())


async def test_gpu_pane_shows_what_the_h200_reports() -> None:
    app, _ = live_app(FakePynvml.h200s(1))
    waiter = MessageWaiter()
    async with app.run_test(size=(120, 40), message_hook=waiter) as pilot:
        # The first sample has no counter interval yet; the next carries rates.
        await waiter.wait_for(gpu_update_where(lambda m: m.state.gpus[0].pcie.rx_bytes_per_s is not None))
        await pilot.pause()
        pane = app.query_one(GpuPane)
        text = _rendered(pane)
        assert "H200" in text
        assert "(Gen5 x16)" in text and "of 63.0" in text
        assert app.query_one("#gpu-message").display is False


async def test_eight_gpus_fit_at_120x40_two_lines_or_more_each() -> None:
    app, _ = live_app(FakePynvml.h200s(8))
    waiter = MessageWaiter()
    async with app.run_test(size=(120, 40), message_hook=waiter) as pilot:
        await waiter.wait_for(gpu_update_where(lambda m: len(m.state.gpus) == 8))
        await pilot.pause()
        panes = list(app.query(GpuPane))
        assert [pane.index for pane in panes] == list(range(8))
        for pane in panes:
            region = pane.region
            assert region.height >= 2
            assert region.y + region.height <= 40 - 1, "a GPU pane is hidden behind the footer"


async def test_pause_freezes_the_display_and_says_so() -> None:
    app, sources = live_app(FakePynvml.h200s(1))
    waiter = MessageWaiter()
    async with app.run_test(size=(120, 40), message_hook=waiter) as pilot:
        await waiter.wait_for(gpu_update_where(lambda m: True))
        await pilot.press("p")
        assert "PAUSED" in _rendered(app.query_one(HeaderBar))
        frozen = app.view.gpu
        await waiter.wait_for(gpu_update_where(lambda m: m.state is not frozen))
        await pilot.pause()
        # Sampling went on (the view holds the new state) but the panes were not repainted from it.
        assert app.view.gpu is not frozen
        assert sources.gpu is not None and sources.gpu.latest() is not None
        await pilot.press("p")
        assert "PAUSED" not in _rendered(app.query_one(HeaderBar))


async def test_plus_and_minus_change_how_often_the_sources_sample() -> None:
    app, sources = live_app(FakePynvml.h200s(1))
    async with app.run_test(size=(120, 40)) as pilot:
        assert [s.interval_s for s in sources.all()] == [1.0, 1.0]
        await pilot.press("plus")
        assert [s.interval_s for s in sources.all()] == [0.5, 0.5]
        assert "every 0.5 s" in _rendered(app.query_one(HeaderBar))
        assert "host, jobs" not in _rendered(app.query_one(HeaderBar))
        await pilot.press("plus")  # the GPU at 4 Hz; the host no faster than twice a second
        assert [s.interval_s for s in sources.all()] == [0.25, HOST_MIN_INTERVAL_S]
        assert "every 0.25 s (host, jobs 0.5 s)" in _rendered(app.query_one(HeaderBar))
        assert HOST_MIN_INTERVAL_S == JOBS_INTERVAL_S  # the header names one period for both
        await pilot.press("minus", "minus", "minus", "minus", "minus", "minus")
        assert [s.interval_s for s in sources.all()] == [5.0, 5.0]


async def test_enter_on_a_gpu_opens_its_detail_and_escape_returns() -> None:
    app, _ = live_app(FakePynvml.h200s(2))
    waiter = MessageWaiter()
    async with app.run_test(size=(120, 40), message_hook=waiter) as pilot:
        await waiter.wait_for(gpu_update_where(lambda m: len(m.state.gpus) == 2))
        await pilot.pause()
        app.query_one("#gpu-1", GpuPane).focus()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, GpuDetailScreen) and app.screen.index == 1
        detail = _rendered(app.screen.query_one("#gpu-detail"))
        assert "RX" in detail and "host to device" in detail and "GPM counters, covers all the time" in detail
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, GpuDetailScreen)


async def test_question_mark_opens_help_and_escape_closes_it() -> None:
    app, _ = live_app(FakePynvml.h200s(1))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


async def test_q_quits_from_the_help_as_from_the_main_view() -> None:
    app, _ = live_app(FakePynvml.h200s(1))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert "W[/] wait" not in str(app.screen.query_one("Static").render())  # markup rendered
        assert "W wait for data, L the loop's own work" in str(app.screen.query_one("Static").render())
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


async def test_a_gpu_lost_mid_run_says_so_in_its_pane() -> None:
    nvml = FakePynvml.h200s(2)
    app, _ = live_app(nvml)
    waiter = MessageWaiter()
    async with app.run_test(size=(120, 40), message_hook=waiter) as pilot:
        await waiter.wait_for(gpu_update_where(lambda m: len(m.state.gpus) == 2))
        nvml.gpus[1].lost = True
        await waiter.wait_for(gpu_update_where(lambda m: m.state.gpus[1].lost_reason is not None))
        await pilot.pause()
        assert "GPU lost" in _rendered(app.query_one("#gpu-1", GpuPane))
        assert "GPU lost" not in _rendered(app.query_one("#gpu-0", GpuPane))


async def test_no_driver_says_so_in_plain_words() -> None:
    app, _ = live_app(FakePynvml(gpus=[], init_error="NVML_ERROR_LIBRARY_NOT_FOUND"))
    waiter = MessageWaiter()
    async with app.run_test(size=(80, 24), message_hook=waiter) as pilot:
        await waiter.wait_for(gpu_update_where(lambda m: m.state.error is not None))
        await pilot.pause()
        message = app.query_one("#gpu-message")
        assert message.display is True
        assert "showing host metrics only" in str(message.render())
        assert not list(app.query_one(GpuArea).query(GpuPane))


async def test_palette_offers_the_same_actions_as_the_keys() -> None:
    app, _ = live_app(FakePynvml.h200s(1))
    async with app.run_test(size=(80, 24)):
        titles = [command.title for command in app.get_system_commands(app.screen)]
        for wanted in ("Pause or resume", "Sample faster", "Sample slower", "Help"):
            assert wanted in titles


async def test_jobs_read_rings_at_least_once_a_second_whatever_the_display_period(tmp_path: Path) -> None:
    """The jobs pane's figures are window statistics, no fresher for reads faster than the display's;
    but a job that starts or ends is drawn within a second, whatever the period (and a ring filling
    fast is read sooner: test_jobs_source)."""
    jobs = JobsSource(ring_dir=str(tmp_path / "rings"))
    sources = Sources(gpu=fake_gpu_source(FakePynvml.h200s(1)), host=HostSource(), jobs=jobs)
    app = XfertopApp(sources, interval_s=1.0)
    reads: list[float] = []
    jobs.subscribe(lambda _state: reads.append(time.monotonic()))
    async with app.run_test(size=(80, 24)) as pilot:
        assert jobs.interval_s == 1.0 and sources.gpu is not None and sources.gpu.interval_s == 1.0
        await pilot.press("minus", "minus")
        assert sources.gpu.interval_s == 5.0 and jobs.interval_s == 1.0
        await pilot.press("plus", "plus", "plus", "plus")
        assert sources.gpu.interval_s == 0.25 and jobs.interval_s == 0.5
        await pilot.press("minus", "minus", "minus", "minus")
        started = time.monotonic()
        await asyncio.sleep(3.0)  # a measuring window: count the reads in it
        recent = [t for t in reads if t >= started]
        # ~3 in 3 s at a 5 s display period; at least 2 on a loaded machine, where reads at the display's
        # period would give at most 1.
        assert len(recent) >= 2, f"{len(recent)} ring reads in 3 s"
