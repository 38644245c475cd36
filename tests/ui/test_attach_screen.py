"""The attach screen: a real py-spy sampler on a real CPU training job, rendered by the real app."""

from __future__ import annotations

import pytest

from pyspy_phases_support import fake_nvml_gpu, nvml_readings, phase_lines, phase_window, phases_job
from pyspy_support import fixture_lines, fixture_window, ptrace_problem, training_job
from ui.live import MessageWaiter
from xfertop.analysis.sampled_verdict import judge_stacks
from xfertop.model.stacks import AttachTarget, StacksState
from xfertop.sources.stacks.source import StackSampler
from xfertop.ui.attach_screen import AttachApp, AttachScreen, StacksUpdated, attach_text

PTRACE_PROBLEM = ptrace_problem()


def test_the_text_shows_shares_workers_and_the_verdict() -> None:
    window = fixture_window("starved_w2")
    target = AttachTarget(pid=window.root_pid, rank=0)
    state = StacksState(timestamp=0.0, targets=(target,), windows=(window,))
    summaries, verdict = judge_stacks(state, lambda pid: fixture_lines("starved_w2"))
    text = attach_text(state, summaries, verdict).plain
    assert text.startswith("input-bound:")
    assert f"rank 0  pid {window.root_pid}" in text
    assert "waiting for data" in text and "loading in the main process" in text
    assert "2 workers, 2 busy over half the window; each busy " in text


def test_before_the_first_window_it_says_it_is_sampling() -> None:
    assert "sampling the first window" in attach_text(None, (), None).plain


@pytest.mark.skipif(PTRACE_PROBLEM is not None, reason=f"py-spy cannot attach here: {PTRACE_PROBLEM}")
async def test_attach_app_samples_a_live_job_and_closes_cleanly() -> None:
    with training_job("starved", "--workers", "0") as job:
        sampler = StackSampler(job.pid, window_s=1, with_ranks=False)
        app = AttachApp(sampler)
        waiter = MessageWaiter()
        async with app.run_test(size=(120, 40), message_hook=waiter) as pilot:
            await waiter.wait_for(lambda m: isinstance(m, StacksUpdated), timeout_s=20)
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, AttachScreen)
            assert screen.verdict is not None and screen.verdict.kind == "input-bound"
            assert "num_workers=0" in screen.verdict.headline
            await pilot.press("q")
        assert sampler._stop.is_set()


def test_the_text_shows_the_gpus_busy_share_beside_the_samples() -> None:
    readings = nvml_readings(phase_window("augment").root_pid, 1)
    window = phase_window("augment", started_at=readings[0].timestamp - 1.0)
    state = StacksState(timestamp=0.0, targets=(AttachTarget(pid=window.root_pid),), windows=(window,))
    summaries, verdict = judge_stacks(state, lambda pid: phase_lines("augment"), readings)
    text = attach_text(state, summaries, verdict).plain
    assert text.startswith("loop-bound: the loop's own code holds the main thread"), text
    assert "main-thread samples; GPU busy 1% (NVML)" in text


@pytest.mark.skipif(PTRACE_PROBLEM is not None, reason=f"py-spy cannot attach here: {PTRACE_PROBLEM}")
async def test_attach_app_reads_the_gpu_while_it_samples() -> None:
    # The real app, py-spy and job (tensor maths on CPU tensors in its loop); NVML is faked: the job alone
    # on its GPU, 1% busy.
    # 2 s windows: the loader and the tiny model hold ~8% of the job's samples, and the loop is found from
    # them; a 1 s window caught none of them about once in 50.
    with phases_job("augment") as job:
        sampler = StackSampler(job.pid, window_s=2, with_ranks=False)
        gpu = fake_nvml_gpu(job.pid, 1)
        app = AttachApp(sampler, gpu)
        waiter = MessageWaiter()
        async with app.run_test(size=(120, 40), message_hook=waiter) as pilot:
            screen = app.screen
            assert isinstance(screen, AttachScreen)
            for _ in range(10):  # windows before the GPU's first reading in them have no busy share
                await waiter.wait_for(lambda m: isinstance(m, StacksUpdated), timeout_s=20)
                await pilot.pause()
                if screen.summaries and screen.summaries[0].gpu_busy_share is not None:
                    break
            assert screen.summaries[0].gpu_busy_share == 0.01
            assert screen.verdict is not None and screen.verdict.kind == "loop-bound", screen.verdict
            await pilot.press("q")
        assert gpu._stop.is_set()  # the app's GPU reader stopped with it
