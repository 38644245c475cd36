"""Host snapshots and ring reads reach the view at the next repaint (an inbox, no message each); the first
of each and a changed job shape still come as messages and are drawn at once."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time

from textual.message import Message
from textual.pilot import Pilot

from ui.live import MessageWaiter
from ui.sample_states import FROZEN_TIME, gpu_state, host_state, jobs_state, rank
from xfertop.sources.base import PollingSource
from xfertop.sources.bundle import Sources
from xfertop.ui.app import XfertopApp
from xfertop.ui.messages import GpuStateUpdated, HostStateUpdated, JobsStateUpdated


class _Manual(PollingSource):
    """A source the test publishes from, on a thread of its own as a real source does."""

    def publish(self, state: object) -> None:
        thread = threading.Thread(target=self._publish, args=(state,))
        thread.start()
        thread.join()


def _at(state, timestamp: float):
    return dataclasses.replace(state, timestamp=timestamp)


async def test_later_snapshots_wait_for_the_repaint_and_keep_the_history() -> None:
    host, jobs = _Manual(1.0), _Manual(1.0)
    app = XfertopApp(Sources(host=host, jobs=jobs), start_sources=False, clock=lambda: FROZEN_TIME)
    seen: list[Message] = []
    waiter = MessageWaiter()

    def hook(message: Message) -> None:
        seen.append(message)
        waiter(message)

    async with app.run_test(size=(160, 48), message_hook=hook) as pilot:
        host.publish(_at(host_state(), 1.0))
        jobs.publish(_at(jobs_state(), 1.0))
        await pilot.pause()
        assert app.view.host is not None and app.view.jobs is not None  # the firsts: at once
        for second in (2.0, 3.0, 4.0):
            host.publish(_at(dataclasses.replace(host_state(), cpu_percent=second * 10), second))
        jobs.publish(_at(jobs_state(), 2.0))  # new steps, same shape
        await pilot.pause()
        assert [type(m) for m in seen].count(HostStateUpdated) == 1
        assert [type(m) for m in seen].count(JobsStateUpdated) == 1
        assert app.view.host.timestamp == 1.0  # not drawn before the next repaint
        app.post_message(GpuStateUpdated(gpu_state(1)))
        await waiter.wait_for(lambda m: isinstance(m, GpuStateUpdated))
        await pilot.pause()
        assert app.view.host.timestamp == 4.0 and app.view.jobs.timestamp == 2.0
        assert app.view.history.get(("host", "cpu"))[-3:] == [20.0, 30.0, 40.0]  # every snapshot kept
        jobs.publish(_at(jobs_state(rank(), rank(rank_index=1, world=2)), 3.0))  # a rank came: at once
        await waiter.wait_for(lambda m: isinstance(m, JobsStateUpdated))
        await pilot.pause()
        assert app.jobs_pane.rank_table.row_count == 2


async def test_without_gpu_samples_the_tick_draws_the_inbox() -> None:
    host = _Manual(0.25)
    app = XfertopApp(Sources(host=host), interval_s=0.25, start_sources=False, clock=lambda: FROZEN_TIME)
    async with app.run_test(size=(160, 48)) as pilot:
        host.publish(_at(host_state(), 1.0))
        await pilot.pause()
        drawn = asyncio.Event()
        update = app.host_pane.update_lines

        def host_drawn() -> None:
            update()
            drawn.set()

        app.host_pane.update_lines = host_drawn  # type: ignore[method-assign]
        host.publish(_at(dataclasses.replace(host_state(), cpu_percent=88.0), 2.0))  # inbox: no message
        await asyncio.wait_for(drawn.wait(), 5.0)  # no GPU sample comes: the tick draws it
        assert app.view.host.timestamp == 2.0
        assert "88%" in app.host_pane.render_line(0).text


async def _sampled(gpu: _Manual, waiter: MessageWaiter, pilot: Pilot) -> None:
    """A GPU sample published from its source's thread, and the repaint it drives done."""
    gpu.publish(gpu_state(1))
    await waiter.wait_for(lambda m: isinstance(m, GpuStateUpdated))
    await pilot.pause()


async def test_with_regular_gpu_samples_the_header_moves_only_with_them() -> None:
    # The GPU samples are the pulse: the tick drew the header's new second between two of them, a screen
    # update of its own (2.4 screen updates a second at 1 Hz where 1.7 do). Samples every ~0.4 s over
    # 2 s, the clock moved after each: the header changes only when a sample comes (the tick: 1.5 s).
    now = [FROZEN_TIME]
    gpu = _Manual(1.0)
    app = XfertopApp(Sources(gpu=gpu), interval_s=1.0, start_sources=False, clock=lambda: now[0])
    waiter = MessageWaiter()
    async with app.run_test(size=(160, 48), message_hook=waiter) as pilot:
        for _ in range(5):
            await _sampled(gpu, waiter, pilot)
            shown = app.header_bar.render_line(0).text
            now[0] += 1.0
            await asyncio.sleep(0.4)  # time passing is what is tested: the tick's 1.5 s falls in here
            assert app.header_bar.render_line(0).text == shown, "the header moved between two samples"


async def test_faster_than_the_jobs_pace_gpu_samples_leave_the_jobs_to_their_snapshots() -> None:
    # At 4 Hz the jobs are read every 0.5 s: each GPU sample analysed and drew them again for nothing new
    # but the GPU's utilisation. They are drawn with their own snapshots; at 1 Hz with every sample.
    gpu, jobs = _Manual(0.25), _Manual(0.5)
    app = XfertopApp(
        Sources(gpu=gpu, jobs=jobs), interval_s=0.25, start_sources=False, clock=lambda: FROZEN_TIME
    )
    waiter = MessageWaiter()
    async with app.run_test(size=(160, 48), message_hook=waiter) as pilot:
        jobs.publish(_at(jobs_state(), 1.0))
        await _sampled(gpu, waiter, pilot)
        shows = []
        show = app.jobs_pane.show

        def counted(*args, **kwargs) -> None:
            shows.append(app.view.jobs.timestamp)
            show(*args, **kwargs)

        app.jobs_pane.show = counted  # type: ignore[method-assign]

        await _sampled(gpu, waiter, pilot)
        await _sampled(gpu, waiter, pilot)
        assert shows == [], "GPU samples alone redrew the jobs at 4 Hz"
        jobs.publish(_at(jobs_state(), 2.0))  # new steps, same shape: waits for the next pulse
        await _sampled(gpu, waiter, pilot)
        assert shows == [2.0]
        app.action_slower()  # 0.5 s: the jobs' own pace
        app.action_slower()  # 1 s
        assert app.view.interval_s == 1.0
        await _sampled(gpu, waiter, pilot)
        assert shows == [2.0, 2.0], "at 1 Hz each sample draws the jobs (their verdicts read it)"


async def test_at_periods_over_a_second_the_clock_moves_between_samples_and_nothing_else() -> None:
    # Every 2 s: the header's clock still moves every second (the tick), while the jobs read meanwhile
    # wait for the next sample, as the period the user chose says.
    now = [FROZEN_TIME]
    gpu, jobs = _Manual(2.0), _Manual(0.5)
    app = XfertopApp(Sources(gpu=gpu, jobs=jobs), interval_s=2.0, start_sources=False, clock=lambda: now[0])
    waiter = MessageWaiter()
    async with app.run_test(size=(160, 48), message_hook=waiter) as pilot:
        jobs.publish(_at(jobs_state(), 1.0))
        await _sampled(gpu, waiter, pilot)
        shown = app.header_bar.render_line(0).text
        jobs.publish(_at(jobs_state(), 2.0))  # new steps, same shape: into the inbox
        now[0] += 1.0
        deadline = time.monotonic() + 5.0
        while app.header_bar.render_line(0).text == shown and time.monotonic() < deadline:
            await pilot.pause(0.05)  # the tick's second is what is awaited
        assert app.header_bar.render_line(0).text != shown, "the clock did not move within the period"
        assert app.view.jobs.timestamp == 1.0, "the jobs were drawn before the period's sample"


async def test_at_slow_periods_the_tick_leaves_the_repaint_to_the_next_gpu_sample() -> None:
    # At --interval 4 the tick (each second, for the clock) found the last repaint 3 s old in the
    # period's last quarter and drew the dirty panes, 40 ms before the GPU sample drew them again: two
    # full screen updates a period. With a 5 s period the 1 s tick always falls in that last quarter.
    gpu, host = _Manual(5.0), _Manual(5.0)
    app = XfertopApp(
        Sources(gpu=gpu, host=host), interval_s=5.0, start_sources=False, clock=lambda: FROZEN_TIME
    )
    waiter = MessageWaiter()
    async with app.run_test(size=(160, 48), message_hook=waiter) as pilot:
        host.publish(_at(host_state(), 1.0))
        await _sampled(gpu, waiter, pilot)
        drawn: list[float] = []
        update = app.host_pane.update_lines

        def host_drawn() -> None:
            drawn.append(app.view.host.timestamp)
            update()

        app.host_pane.update_lines = host_drawn  # type: ignore[method-assign]
        host.publish(_at(dataclasses.replace(host_state(), cpu_percent=88.0), 2.0))  # inbox: no message
        await asyncio.sleep(4.8)  # time passing is what is tested: a tick falls in 3.75-4.8 s
        assert drawn == [], "a tick drew the panes the next GPU sample draws"
        await _sampled(gpu, waiter, pilot)
        assert drawn == [2.0]
