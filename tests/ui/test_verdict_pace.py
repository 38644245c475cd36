"""Verdict lines are judged again at most once a second, except when what they judge changed shape."""

from __future__ import annotations

import dataclasses

import pytest

from ui.sample_states import FROZEN_TIME, gpu_state, jobs_state, rank, steps
from xfertop.ui import jobs_pane
from xfertop.ui.app import XfertopApp
from xfertop.ui.sources_bundle import Sources


async def test_verdicts_are_judged_once_a_second_unless_the_jobs_changed_shape(
        monkeypatch: pytest.MonkeyPatch) -> None:
    judged: list[int] = []
    verdict_text = jobs_pane.verdict_text
    monkeypatch.setattr(jobs_pane, "verdict_text",
                        lambda *args: (judged.append(1), verdict_text(*args))[1])
    app = XfertopApp(Sources(), start_sources=False, clock=lambda: FROZEN_TIME)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        pane = app.jobs_pane
        gpus = gpu_state(1)
        pane.show(jobs_state(), gpus)
        assert len(judged) == 1
        more_steps = jobs_state(dataclasses.replace(rank(), steps=steps(61, wait_ms=60.0)))
        pane.show(more_steps, gpus)  # new steps within the second: the rank row moves, not the verdict
        assert len(judged) == 1
        pane.show(jobs_state(rank(), rank(rank_index=1, world=2)), gpus)  # a rank came: at once
        assert len(judged) == 2
        pane.show(jobs_state(rank(status="stalled"), rank(rank_index=1, world=2)), gpus)  # a state changed
        assert len(judged) == 3
        pane._judged_at -= jobs_pane.VERDICT_PERIOD_S  # a second later
        pane.show(jobs_state(rank(status="stalled"), rank(rank_index=1, world=2)), gpus)
        assert len(judged) == 4
