"""One analysis per snapshot: frozen verdicts of ended jobs, how they ended, statistics reused."""

from __future__ import annotations

import dataclasses
import signal

import pytest

from analysis.step_records import step_record
from analysis.window_fixtures import load_window
from ui.sample_states import FROZEN_TIME, gpu_state
from xfertop.analysis.job_analysis import analyse
from xfertop.analysis.thresholds import EARLY_MIN_STEPS, WARMUP_STEPS, WINDOW_STEPS
from xfertop.model.jobs import JobsState, JobState, RankEnd, RankState


def _jobs(*ranks: RankState) -> JobsState:
    job = JobState(ranks[0].job_key, "train.py", ranks)
    return JobsState(timestamp=FROZEN_TIME, jobs=(job,), ring_dir="/tmp/x")


def _sole_user_gpu(pid: int, util: float):
    state = gpu_state(util=util)
    first = state.gpus[0]
    proc = dataclasses.replace(first.processes[0], pid=pid)
    return dataclasses.replace(state, gpus=(dataclasses.replace(first, processes=(proc,)),))


def _ended(rank: RankState, end: RankEnd) -> RankState:
    return dataclasses.replace(rank, status="finished", end=end)


def test_an_ended_job_keeps_the_verdict_of_its_last_live_window() -> None:
    # Small kernels: launch-bound while NVML says 16%, compute-bound by the host's model share without it.
    live = load_window("launch_bound_small_kernels").ranks[0]
    busy_then = _sole_user_gpu(live.pid, util=16.0)
    first = analyse(_jobs(live), busy_then)
    assert first.jobs[0].verdict.kind == "launch-bound"
    assert first.jobs[0].live and not first.jobs[0].frozen

    # The job ends; the GPU is now busy with someone else's work at 99%: not this job's.
    ended = _ended(live, RankEnd(closed_ring=True, exit_code=0))
    other = gpu_state(util=99.0)
    second = analyse(_jobs(ended), other, previous=first)
    job = second.jobs[0]
    assert (job.live, job.frozen, job.failed) == (False, True, False)
    assert job.verdict == first.jobs[0].verdict
    assert job.ended_how == ("exited 0",)
    # And it stays frozen snapshot after snapshot.
    third = analyse(_jobs(ended), other, previous=second)
    assert third.jobs[0].frozen and third.jobs[0].verdict == first.jobs[0].verdict


def test_a_job_that_ends_is_judged_on_its_rings_last_steps_with_the_evidence_seen_live() -> None:
    """Session 46's trial: the summary (judging every 2 s) last saw a validation job's steps 800-879 and
    kept "healthy"; the live view, polled later, froze steps 840-919 at "loop-bound" (its truth); the job
    ran to 940. Whenever a face last looked, the job's ring's last steps are what it freezes, judged
    with the evidence of its last live verdict (NVML's 90% then, not the 3% of its GPU gone quiet)."""
    rank = load_window("launch_bound_small_kernels").ranks[0]
    fed = [step_record(i, model_ms=20.0, wait_ms=0.2, partitioned=True) for i in range(200)]
    starved = [step_record(200 + i, model_ms=20.0, wait_ms=20.0, partitioned=True) for i in range(200)]
    first = analyse(_jobs(dataclasses.replace(rank, steps=tuple(fed))), _sole_user_gpu(rank.pid, util=90.0))
    assert first.jobs[0].verdict.kind == "compute-bound", first.jobs[0].verdict.headline
    ended = _ended(
        dataclasses.replace(rank, steps=tuple(fed + starved)), RankEnd(closed_ring=True, exit_code=0)
    )
    second = analyse(_jobs(ended), _sole_user_gpu(rank.pid, util=3.0), previous=first)
    job = second.jobs[0]
    # The last 200 steps waited half of each, with the GPU 90% busy when last seen live: a wait hidden by
    # queued work. The live verdict had seen no wait at all; today's 3% would have read it as starving.
    assert job.frozen and job.verdict.evidence["gpu_busy_share"] == 0.9, job.verdict.evidence
    assert "its 50% DataLoader wait is hidden by queued GPU work" in job.verdict.headline, (
        job.verdict.headline
    )
    # Frozen from then on: the same verdict whatever comes after.
    third = analyse(_jobs(ended), gpu_state(util=99.0), previous=second)
    assert third.jobs[0].verdict == job.verdict


def test_a_job_seen_only_after_it_ended_is_judged_by_its_steps_without_nvml() -> None:
    live = load_window("launch_bound_small_kernels").ranks[0]
    ended = _ended(live, RankEnd(closed_ring=False))
    analysis = analyse(_jobs(ended), _sole_user_gpu(live.pid, util=0.0))
    job = analysis.jobs[0]
    assert job.verdict.kind == "compute-bound"  # not "launch-bound: busy 0%" from today's idle GPU
    assert (job.frozen, job.failed, job.ended_how) == (False, True, ("ended without closing its ring",))
    assert job.ranks[0].gpu_busy_share is None


def test_a_job_that_ends_before_a_snapshot_judged_it_gets_the_verdict_of_its_ring() -> None:
    """Last seen live with 3 steps (warming up), then ended with a whole window in its ring: its ring is
    judged, without the GPU's evidence of now, and that verdict stays. Before, the warming-up of the last
    live snapshot was frozen: a 28-step H200 job read "warming-up: 2 of the 5 steps" in its summary."""
    rank = load_window("launch_bound_small_kernels").ranks[0]
    young = dataclasses.replace(rank, steps=rank.steps[:3])
    first = analyse(_jobs(young), _sole_user_gpu(rank.pid, util=16.0))
    assert first.jobs[0].verdict.kind == "warming-up" and first.jobs[0].live

    ended = _ended(rank, RankEnd(closed_ring=True, exit_code=0))
    second = analyse(_jobs(ended), _sole_user_gpu(rank.pid, util=0.0), previous=first)
    job = second.jobs[0]
    assert (job.live, job.frozen) == (False, True)
    assert job.verdict.kind == "compute-bound", job.verdict.headline  # not "launch-bound: busy 0%"
    third = analyse(_jobs(ended), gpu_state(util=99.0), previous=second)
    assert third.jobs[0].verdict == job.verdict


def test_a_job_last_judged_early_gets_the_verdict_of_its_ring_with_the_evidence_seen_live() -> None:
    """Last seen live on an early window (NVML 16% busy: launch-bound), then ended with a whole window in
    its ring: the ring is judged with NVML's figure of that live snapshot, not today's (0%, or another
    job's 99%). Before, the early window's verdict was frozen: a 24-step job's summary said "early, 7
    steps", and advice that needs 8 steps was missing or not, by when the last live snapshot came."""
    rank = load_window("launch_bound_small_kernels").ranks[0]
    young = dataclasses.replace(rank, steps=rank.steps[: WARMUP_STEPS + EARLY_MIN_STEPS + 2])
    first = analyse(_jobs(young), _sole_user_gpu(rank.pid, util=16.0))
    live = first.jobs[0].verdict
    assert live.kind == "launch-bound" and live.evidence["early"], live.headline

    ended = _ended(rank, RankEnd(closed_ring=True, exit_code=0))
    second = analyse(_jobs(ended), gpu_state(util=99.0), previous=first)
    job = second.jobs[0]
    assert (job.live, job.frozen) == (False, True)
    assert job.verdict.kind == "launch-bound" and not job.verdict.evidence["early"], job.verdict.headline
    assert job.verdict.evidence["steps"] > live.evidence["steps"]
    assert job.verdict.evidence["gpu_busy_share"] == live.evidence["gpu_busy_share"]
    third = analyse(_jobs(ended), gpu_state(util=0.0), previous=second)
    assert third.jobs[0].verdict == job.verdict


def test_how_a_rank_ended_is_said_in_words() -> None:
    assert RankEnd(closed_ring=False, signal=int(signal.SIGKILL)).describe() == "killed by SIGKILL"
    assert RankEnd(closed_ring=True, exit_code=3).describe() == "exited 3"
    assert RankEnd(closed_ring=True).describe() == "ended"
    assert RankEnd(closed_ring=True, exit_code=3).failed and not RankEnd(closed_ring=True).failed


def test_a_rank_whose_steps_did_not_change_keeps_its_statistics() -> None:
    live = load_window("input_bound_gpu").ranks[0]
    first = analyse(_jobs(live), None)
    again = analyse(_jobs(dataclasses.replace(live, heartbeat_age_s=0.5)), None, previous=first)
    assert again.jobs[0].ranks[0].stats is first.jobs[0].ranks[0].stats
    moved = dataclasses.replace(live, steps=live.steps[1:])
    changed = analyse(_jobs(moved), None, previous=first)
    assert changed.jobs[0].ranks[0].stats is not first.jobs[0].ranks[0].stats
    assert again.rank(live) is again.jobs[0].ranks[0]


def test_a_job_that_stops_stepping_keeps_the_verdict_of_its_last_stepping_window() -> None:
    live = load_window("input_bound_gpu").ranks[0]
    first = analyse(_jobs(live), None)
    assert first.jobs[0].verdict.kind == "input-bound" and not first.jobs[0].frozen
    tearing_down = dataclasses.replace(live, heartbeat_age_s=30.0)  # still live, no step for 30 s
    second = analyse(_jobs(tearing_down), None, previous=first)
    job = second.jobs[0]
    assert (job.live, job.frozen) == (True, True) and job.verdict == first.jobs[0].verdict
    stepping_again = dataclasses.replace(live, steps=live.steps[1:])
    assert not analyse(_jobs(stepping_again), None, previous=second).jobs[0].frozen


# -- a live job is judged on the steps its ring holds, whenever the snapshot falls -----------------------
def _ring_at(rank: RankState, at_ns: int) -> RankState:
    """The rank as a snapshot at ``at_ns`` (CLOCK_MONOTONIC) saw it: the steps closed by then, its
    heartbeat the last one's end."""
    closed = tuple(s for s in rank.steps if s.start_monotonic_ns + s.wall_ms * 1e6 <= at_ns)
    last_end = closed[-1].start_monotonic_ns + closed[-1].wall_ms * 1e6 if closed else at_ns
    return dataclasses.replace(rank, steps=closed, heartbeat_age_s=(at_ns - last_end) / 1e9)


@pytest.mark.parametrize("phase_s", [0.0, 0.3, 0.6, 0.9])
def test_a_job_whose_batches_arrive_in_bursts_gets_its_verdict_between_bursts(phase_s: float) -> None:
    """Scenario c on a loaded box (recorded): four workers on one shared core deliver four batches at
    once, then nothing for ~1.1 s. Snapshots a second apart mostly fall between bursts, where the last
    step (~12 ms typical) is long overdue; each must judge the steps the ring holds by then. Before, the
    first snapshot's warming-up was held through every overdue one: CI's live view read "warming-up: 0
    of the 5 steps" for a whole 30-step run that ended input-bound."""
    rank = load_window("confined_workers_bursty_cpu").ranks[0]
    start = rank.steps[0].start_monotonic_ns
    end = rank.steps[-1].start_monotonic_ns + rank.steps[-1].wall_ms * 1e6
    analysis, judged = None, []
    at = start + phase_s * 1e9
    while at <= end:
        seen = _ring_at(rank, int(at))
        analysis = analyse(_jobs(seen), None, previous=analysis)
        job = analysis.jobs[0]
        if len(seen.steps) >= WARMUP_STEPS + EARLY_MIN_STEPS:
            judged.append(job.verdict.kind)
            usable = len(seen.steps) - WARMUP_STEPS
            assert job.verdict.evidence["steps"] == min(usable, WINDOW_STEPS), job.verdict.headline
        at += 1e9
    assert len(judged) >= 5 and set(judged) == {"input-bound"}, judged


def test_a_loop_that_stopped_after_new_steps_keeps_the_verdict_they_earned() -> None:
    """The hold for a stopped loop still holds: the snapshot after the last burst judges it; the next
    ones, with no new step and the heartbeat overdue, keep that verdict whatever NVML says now."""
    rank = load_window("confined_workers_bursty_cpu").ranks[0]
    last = rank.steps[-1]
    end = last.start_monotonic_ns + int(last.wall_ms * 1e6)
    busy = _sole_user_gpu(rank.pid, util=16.0)
    first = analyse(_jobs(_ring_at(rank, end + 10_000_000)), busy)
    later = analyse(_jobs(_ring_at(rank, end + 600_000_000)), gpu_state(util=99.0), previous=first)
    assert first.jobs[0].verdict.kind == "input-bound"
    assert later.jobs[0].verdict == first.jobs[0].verdict and not later.jobs[0].frozen
