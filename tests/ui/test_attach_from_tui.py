"""`s` on a process or a job rank attaches py-spy from the live view: the real app, a real py-spy
sampler and a real CPU training process; only NVML is faked (it lists the process as a GPU process)."""

from __future__ import annotations

import dataclasses
import functools
import subprocess
import sys
from types import SimpleNamespace

import pytest

from fakes.fake_pynvml import FakePynvml
from pyspy_support import ptrace_problem, training_job
from ui.live import MessageWaiter, fake_gpu_source, gpu_update_where
from ui.sample_states import jobs_state, rank
from xfertop.sources.bundle import Sources
from xfertop.sources.jobs.prometheus_jobs import PrometheusJobsSource
from xfertop.sources.stacks.source import StackSampler
from xfertop.ui.app import XfertopApp
from xfertop.ui.attach_screen import AttachScreen, StacksUpdated
from xfertop.ui.jobs_pane import RankTable
from xfertop.ui.messages import JobsStateUpdated
from xfertop.ui.process_table import ProcessTable

PTRACE_PROBLEM = ptrace_problem()
#: One-second windows keep the test short; everything else is the `s` key's default sampler.
QUICK_SAMPLER = functools.partial(StackSampler, window_s=1)


def _app_with_gpu_process(pid: int) -> XfertopApp:
    nvml = FakePynvml.h200s(1)
    nvml.gpus[0].processes.append(SimpleNamespace(pid=pid, usedGpuMemory=2 * 10**9))
    return XfertopApp(Sources(gpu=fake_gpu_source(nvml), stack_sampler=QUICK_SAMPLER))


def _exited_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.mark.skipif(PTRACE_PROBLEM is not None, reason=f"py-spy cannot attach here: {PTRACE_PROBLEM}")
async def test_s_on_a_process_samples_its_stacks_and_escape_returns() -> None:
    with training_job("starved", "--workers", "0") as job:
        app = _app_with_gpu_process(job.pid)
        waiter = MessageWaiter()
        async with app.run_test(size=(120, 40), message_hook=waiter) as pilot:
            await waiter.wait_for(gpu_update_where(lambda m: bool(m.state.gpus[0].processes)))
            await pilot.pause()
            table = app.query_one(ProcessTable)
            assert str(job.pid) in table.row_keys
            table.focus()
            await pilot.pause()
            footer_keys = {
                key: active.binding.description
                for key, active in app.active_bindings.items()
                if active.binding.show
            }
            assert footer_keys.get("s") == "Stacks"
            await pilot.press("s")
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, AttachScreen) and screen.sampler.pid == job.pid
            # The screen reads the live view's GPU source: NVML lists the job alone on its GPU, idle. A
            # window judged before a GPU reading fell inside it has no busy share yet: wait for one that has.
            for _ in range(10):
                await waiter.wait_for(lambda m: isinstance(m, StacksUpdated), timeout_s=30)
                await pilot.pause()
                if screen.summaries and screen.summaries[0].gpu_busy_share is not None:
                    break
            assert screen.summaries[0].gpu_busy_share == 0.0
            assert screen.verdict is not None and screen.verdict.kind == "input-bound"
            assert "num_workers=0" in screen.verdict.headline
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, AttachScreen)
            assert screen.sampler._stop.is_set()  # py-spy stopped with the screen


async def test_s_on_a_process_that_cannot_be_sampled_says_why_and_stays() -> None:
    gone = _exited_pid()
    app = _app_with_gpu_process(gone)
    waiter = MessageWaiter()
    async with app.run_test(size=(120, 40), message_hook=waiter) as pilot:
        await waiter.wait_for(gpu_update_where(lambda m: bool(m.state.gpus[0].processes)))
        await pilot.pause()
        app.query_one(ProcessTable).focus()
        await pilot.press("s")
        await pilot.pause()
        assert not isinstance(app.screen, AttachScreen)
        [notification] = list(app._notifications)
        assert notification.title == f"cannot sample pid {gone}"
        assert notification.message == (f"process {gone} is not running (no /proc/{gone}): check the pid.")


async def test_s_on_a_job_rank_attaches_to_that_ranks_pid() -> None:
    gone = _exited_pid()
    asked: list[int] = []

    def sampler(pid: int) -> StackSampler:
        asked.append(pid)
        return StackSampler(pid, window_s=1)

    app = XfertopApp(Sources(stack_sampler=sampler), start_sources=False)
    ranked = dataclasses.replace(rank(), pid=gone)
    async with app.run_test(size=(120, 40)) as pilot:
        app.post_message(JobsStateUpdated(jobs_state(ranked)))
        await pilot.pause()
        app.query_one(RankTable).focus()
        await pilot.press("s")
        await pilot.pause()
        assert asked == [gone]
        [notification] = list(app._notifications)
        assert "is not running" in notification.message and not isinstance(app.screen, AttachScreen)


async def test_s_on_a_rank_read_from_prometheus_says_where_to_attach() -> None:
    asked: list[int] = []

    def sampler(pid: int) -> StackSampler:
        asked.append(pid)
        return StackSampler(pid, window_s=1)

    jobs = PrometheusJobsSource("http://127.0.0.1:9", interval_s=60.0)  # never started: nothing fetched
    app = XfertopApp(Sources(jobs=jobs, stack_sampler=sampler), start_sources=False)
    remote = dataclasses.replace(rank(), pid=4242, host="node-b")
    async with app.run_test(size=(120, 40)) as pilot:
        app.post_message(JobsStateUpdated(jobs_state(remote)))
        await pilot.pause()
        app.query_one(RankTable).focus()
        await pilot.press("s")
        await pilot.pause()
        assert asked == []  # no py-spy on a local process that happens to have that pid
        [notification] = list(app._notifications)
        assert notification.message.startswith("pid 4242 runs on node-b: ")
        assert "`xfertop attach 4242` on node-b" in notification.message
