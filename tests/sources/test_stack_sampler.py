"""The rolling sampler's behaviour around failures (real py-spy, no ptrace needed: the target is gone)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pyspy_support import ptrace_problem, training_job
from xfertop.analysis.sampled_verdict import judge_stacks
from xfertop.analysis.stack_classify import summarise_window
from xfertop.sources.stacks.pyspy_runner import PySpyError, find_pyspy
from xfertop.sources.stacks.source import StackSampler
from xfertop.sources.stacks.source_lines import line_reader


def pyspy_missing() -> bool:
    try:
        find_pyspy()
    except PySpyError:
        return True
    return False


@pytest.mark.skipif(pyspy_missing(), reason="py-spy is not installed")
def test_a_target_that_is_gone_gives_a_sentence_and_slows_the_retries() -> None:
    sampler = StackSampler(999_999, window_s=2, with_ranks=False)
    state = sampler.sample_once()
    assert state.error == "process 999999 is not running any more: check the pid."
    assert sampler.interval_s == 2.0


def test_the_problem_is_known_before_any_window_runs() -> None:
    sampler = StackSampler(999_999, with_ranks=False)
    problem = sampler.problem()
    assert problem is not None
    assert "is not running" in problem or "py-spy was not found" in problem


@pytest.mark.skipif(ptrace_problem() is not None, reason="py-spy cannot attach here")
def test_our_own_process_has_no_attach_problem() -> None:
    import os

    assert StackSampler(os.getpid(), with_ranks=False).problem() is None


@pytest.mark.skipif(ptrace_problem() is not None, reason="py-spy cannot attach here")
def test_sync_lines_are_read_after_the_job_has_exited() -> None:
    # The H200 failure on CPU: a window judged once the job is gone (as tests/gpu/test_attach_gpu.py
    # and `attach --once` on a job that just ended do). With py-spy's short names ("train_cpu.py") the
    # file could only be found through /proc/PID/cwd and cmdline, so every .item() sample was "other".
    # 5 s: only the loader's and the tiny model's samples show a CPU job's loop running (a sync on a CPU
    # waits for nothing), and a 2 s window holds 5 to 16 of them on an idle 2-core VM, as few as 2 with
    # the cores busy: CI once caught none ("not in the training loop yet"). 5 s holds 2.5 times as many.
    with training_job("native_sync") as job:
        state = StackSampler(job.pid, window_s=5, with_ranks=False).sample_once()
    (summary,), verdict = judge_stacks(state, line_reader)
    # Three of the loop's five lines after the step sync (.item(), .cpu(), .tolist()): about 50% of the
    # samples, 0% when the lines could not be read. Read as a process whose maps are unknown: one known to
    # use no GPU has those samples as compute (summarise_window).
    (window,) = state.windows
    assert window.placement is not None and window.placement.uses_cuda is False
    unknown = summarise_window(
        replace(window, placement=replace(window.placement, uses_cuda=None)), line_reader(window.root_pid)
    )
    assert unknown.shares.share("gpu_sync") >= 0.4, unknown.to_dict()
    assert summary.shares.share("gpu_sync") == 0.0, summary.to_dict()
    # A process known to use no GPU waits for none in those lines: they are the loop's own work after the
    # step, as `xfertop run` reads them on a CPU (session 46: "sync-bound: waits for the GPU" before).
    assert verdict.kind in ("loop-bound", "compute-bound"), verdict.headline
    assert "waits for the GPU" not in verdict.headline, verdict.headline
