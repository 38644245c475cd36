"""Rank rows reuse a rank's window statistics while its steps are the very same, and follow new steps."""

from __future__ import annotations

import dataclasses

import pytest

from ui.sample_states import FROZEN_TIME, gpu_state, jobs_state, rank, steps
from xfertop.ui import rank_row
from xfertop.ui.app import XfertopApp
from xfertop.ui.messages import GpuStateUpdated, JobsStateUpdated
from xfertop.ui.sources_bundle import Sources


async def test_a_ranks_stats_are_computed_again_only_when_its_steps_change(
        monkeypatch: pytest.MonkeyPatch) -> None:
    computed: list[int] = []
    window_stats = rank_row.window_stats

    def counting(steps_: tuple) -> object:
        computed.append(len(steps_))
        return window_stats(steps_)

    monkeypatch.setattr(rank_row, "window_stats", counting)
    app = XfertopApp(Sources(), start_sources=False, clock=lambda: FROZEN_TIME)
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.jobs_pane.rank_table
        slow, quick = rank(), rank(rank_index=1, world=2)
        app.post_message(JobsStateUpdated(jobs_state(slow, quick)))
        app.post_message(GpuStateUpdated(gpu_state(1)))
        await pilot.pause()
        assert sorted(computed) == [60, 60]
        step_of = lambda key: str(table.get_row(key)[3])  # noqa: E731
        before = step_of(rank_row.rank_key(quick))
        computed.clear()
        # A new read: the slow rank's ring had no new steps (the same tuple, a newer heartbeat), the quick
        # one's steps moved on and got slower.
        longer = tuple(dataclasses.replace(s, wall_ms=2 * s.wall_ms) for s in steps(count=80))
        app.post_message(JobsStateUpdated(jobs_state(dataclasses.replace(slow, heartbeat_age_s=0.3),
                                                     dataclasses.replace(quick, steps=longer))))
        app.post_message(GpuStateUpdated(gpu_state(1)))
        await pilot.pause()
        assert computed == [80]
        assert step_of(rank_row.rank_key(quick)) != before
        computed.clear()
        # Equal steps in a new tuple (a source that rebuilt it): computed again, never a stale row.
        app.post_message(JobsStateUpdated(jobs_state(dataclasses.replace(slow, steps=steps()),
                                                     dataclasses.replace(quick, steps=longer))))
        app.post_message(GpuStateUpdated(gpu_state(1)))
        await pilot.pause()
        assert computed == [60] and slow.steps == steps()
