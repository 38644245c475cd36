"""`b` and `a` open the benchmark and acceptance screens, asking first when a job uses the GPU."""

from __future__ import annotations

from dataclasses import replace

from ui.sample_states import FROZEN_TIME, gpu_state, jobs_state, rank
from xfertop.sources.bundle import Sources
from xfertop.ui.app import XfertopApp
from xfertop.ui.bench_screen import BenchScreen, ConfirmCompete
from xfertop.ui.competing import competing_job
from xfertop.ui.messages import GpuStateUpdated, JobsStateUpdated
from xfertop.ui.view_state import ViewState


async def _open(key: str) -> tuple[type, str, type]:
    app = XfertopApp(Sources(), start_sources=False, clock=lambda: FROZEN_TIME)
    async with app.run_test(size=(120, 40)) as pilot:
        app.post_message(GpuStateUpdated(gpu_state(2)))
        app.post_message(JobsStateUpdated(jobs_state()))
        await pilot.pause()
        await pilot.press(key)
        await pilot.pause()
        asked = type(app.screen)
        title = app.screen_stack[-2].bench_title if isinstance(app.screen_stack[-2], BenchScreen) else ""
        await pilot.press("n")  # do not start a benchmark child in a unit test
        await pilot.pause()
        return asked, title, type(app.screen)


async def test_b_asks_before_competing_with_a_job_and_cancel_returns() -> None:
    asked, title, after = await _open("b")
    assert asked is ConfirmCompete and title == "benchmarks"
    assert after is not BenchScreen and after is not ConfirmCompete


async def test_a_opens_the_acceptance_check() -> None:
    asked, title, _ = await _open("a")
    assert asked is ConfirmCompete and title == "acceptance check"


def test_only_gpu_work_competes() -> None:
    view = ViewState()
    view.apply_jobs(jobs_state(replace(rank(), device="cpu")))
    view.apply_gpu(gpu_state(2))
    assert competing_job(view, 1) is None, "GPU 1 has no process and the job runs on the CPU"
    assert competing_job(view, 0) == "pid 4242 python train.py --epochs 3"
    view.apply_jobs(jobs_state(rank()))
    assert competing_job(view, 1) == "train.py"
