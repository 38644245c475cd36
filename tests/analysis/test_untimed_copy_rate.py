"""Copies nobody timed, estimated from the GPU's PCIe RX: the pageable rate the estimate assumes follows
the bytes each step moves (large pageable copies run at half the speed of mid-sized ones on an H200)."""

from __future__ import annotations

import dataclasses

from analysis.window_fixtures import load_window
from ui.sample_states import gpu_state, host_state
from xfertop.analysis.job_analysis import analyse
from xfertop.analysis.steps import window_stats
from xfertop.analysis.verdict import Verdict
from xfertop.model.gpu import GpuState
from xfertop.model.jobs import JobsState, JobState, RankState


def _untimed_rank() -> RankState:
    """A GPU-timed window whose copies nobody marked (xfertop.watch, no copy timing)."""
    rank = load_window("sync_bound").ranks[0]
    steps = tuple(
        dataclasses.replace(
            s,
            copy_gpu_ms=None,
            h2d_bytes=0,
            copied=False,
            compute_gpu_ms=(s.compute_gpu_ms or 0) + (s.copy_gpu_ms or 0),
        )
        for s in rank.steps
    )
    return dataclasses.replace(rank, steps=steps, device="cuda:0", copy_timing=False)


def _verdict(rank: RankState, util: float, rx: float) -> Verdict:
    state = gpu_state(util=util, rx=rx)
    first = state.gpus[0]
    sole = dataclasses.replace(first.processes[0], pid=rank.pid)
    gpus = GpuState(**{**vars(state), "gpus": (dataclasses.replace(first, processes=(sole,)),)})
    jobs = JobsState(timestamp=0.0, jobs=(JobState(rank.job_key, "train.py", (rank,)),), ring_dir="/x")
    return analyse(jobs, gpus).jobs[0].verdict


def _step_s(rank: RankState) -> float:
    stats = window_stats(rank.steps)
    assert stats is not None
    return stats.wall.p50_ms / 1000


def test_a_link_moving_a_large_batch_each_step_is_copy_bound_at_the_large_pageable_rate() -> None:
    # Scenario e on the H200 under xfertop.watch: 100 MB pageable batches, RX ~3.9 GB/s, kernels 25%
    # busy: at 15 GB/s the copies were guessed at 26% of the step (host-bound: wrong); at the 7 GB/s that
    # 100 MB pageable copies run at, 56%: the truth was 68%. Here 80 MB a step: 24% against 52%.
    rank = _untimed_rank()
    rx = 80e6 / _step_s(rank)
    verdict = _verdict(rank, util=25.0, rx=rx)
    assert verdict.headline.startswith("copy-bound (likely): "), verdict.headline
    assert "pin_memory=True" in " ".join(verdict.advice)


def test_the_same_rate_from_small_per_step_volumes_stays_host_bound() -> None:
    # 20% of the 15 GB/s a mid-sized pageable copy reaches, in volumes under 64 MiB a step: under the 30%
    # bar of the pageable estimate, and at 7 GB/s it would have crossed it (43%): the size decides.
    rank = _untimed_rank()
    rx = 3.0e9
    assert rx * _step_s(rank) < 64 * 2**20
    verdict = _verdict(rank, util=25.0, rx=rx)
    assert verdict.kind == "host-bound", verdict.headline


def test_a_job_whose_pinned_memory_holds_a_step_is_not_guessed_pageable() -> None:
    # The same 80 MB a step, from a job that pins (pin_memory=True: the reporter's pinned host memory
    # holds several batches): at link speed that is 6% of the step, no copy-bound guess.
    rank = dataclasses.replace(_untimed_rank(), pinned_host_bytes=512 * 2**20)
    rx = 80e6 / _step_s(rank)
    state = gpu_state(util=25.0, rx=rx)
    first = state.gpus[0]
    sole = dataclasses.replace(first.processes[0], pid=rank.pid)
    gpus = GpuState(**{**vars(state), "gpus": (dataclasses.replace(first, processes=(sole,)),)})
    host = host_state()
    jobs = JobsState(
        timestamp=0.0,
        jobs=(JobState(rank.job_key, "train.py", (dataclasses.replace(rank, host=host.hostname),)),),
        ring_dir="/x",
    )
    verdict = analyse(jobs, gpus, host=host).jobs[0].verdict
    assert verdict.kind == "host-bound", verdict.headline
