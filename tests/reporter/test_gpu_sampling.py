"""GPU-clock sampling: short steps get their GPU gap measured every k-th step, within a host-time budget.

The fake CUDA charges each call what it costs the host on an H200 (busy-waits), so the clock's own
measurement of its CUDA calls, and hence its choice of k, behaves as it would there.
"""

from __future__ import annotations

import itertools
import random
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from fakes.fake_cuda import H200_COSTS_NS, FakeCuda
from xfertop import wire
from xfertop.analysis.steps import select_window
from xfertop.model.jobs import StepRecord
from xfertop.reporter._clock import StepClock
from xfertop.reporter._gpu_sampling import GPU_EVERY_MAX, GpuSampling
from xfertop.reporter._gpu_timer import GpuTimer
from xfertop.reporter._identity import current_identity
from xfertop.reporter._ring_writer import RingWriter
from xfertop.sources.jobs.ring_reader import RingReader


def _clock(tmp_path: Path, gpu: FakeCuda) -> StepClock:
    clock = StepClock(lambda: RingWriter(str(tmp_path), current_identity()))
    clock.before_next()  # opens the ring
    clock.gap.timer = GpuTimer(gpu, 0)
    clock.gap.sampling.enabled = True
    return clock


def _steps(clock: StepClock) -> list[StepRecord]:
    assert clock.writer is not None
    reader = RingReader(clock.writer.path)
    reader.poll()
    return list(reader.steps)


def _modelled_ns(gpu: FakeCuda) -> int:
    costs = gpu.costs_ns
    return (
        gpu.records * costs["record"]
        + gpu.queries * costs["query"]
        + gpu.elapsed_calls * costs["elapsed_time"]
    )


_BATCH = SimpleNamespace(shape=(8, 64), is_cuda=False)


def _short_steps(clock: StepClock, gpu: FakeCuda, count: int) -> None:
    """A fast loop: a few microseconds of host work per step, a copy marked, events complete at once."""
    for _ in range(count):
        clock.before_next()
        clock.after_next([_BATCH])
        clock.work.copied(4096, False, False, 1_000, None)
        gpu.host_work(0.01)


def test_short_steps_keep_the_modelled_gpu_cost_within_budget(tmp_path: Path) -> None:
    gpu = FakeCuda(costs=H200_COSTS_NS)
    clock = _clock(tmp_path, gpu)
    _short_steps(clock, gpu, 300)  # settles k
    before = (gpu.records, gpu.queries, gpu.elapsed_calls)
    records, queries, elapsed = before
    # k adapts while the loop runs (a loaded machine stretches the busy-waits the clock measures): the
    # timed steps fall between the rates of the smallest and the largest k in force.
    steps = 2000
    smallest_every, largest_every = clock.gap.sampling.every, clock.gap.sampling.every
    for _ in range(steps):
        _short_steps(clock, gpu, 1)
        smallest_every = min(smallest_every, clock.gap.sampling.every)
        largest_every = max(largest_every, clock.gap.sampling.every)
    modelled = (
        (gpu.records - records) * H200_COSTS_NS["record"]
        + (gpu.queries - queries) * H200_COSTS_NS["query"]
        + (gpu.elapsed_calls - elapsed) * H200_COSTS_NS["elapsed_time"]
    )
    per_step_ns = modelled / steps
    # A measured gap on a drained stream costs 2 records (``after``, ``first``) + 2 queries (``after`` at
    # the first work, ``first`` at the boundary) + 1 elapsed_time = ~9.2 us in the model: k must be >= 4.
    assert clock.gap.sampling.every >= 4, clock.gap.sampling.every
    assert per_step_ns <= clock.gap.sampling.budget_floor_ns * 1.05, per_step_ns
    # Measured gaps are cheap in calls: one elapsed_time each, two queries, two records.
    timed = gpu.elapsed_calls - elapsed
    assert steps / largest_every * 0.75 <= timed <= steps / smallest_every * 1.25, (
        timed,
        smallest_every,
        largest_every,
    )
    assert (gpu.queries - queries) <= timed * 2 + 2
    assert (gpu.records - records) <= timed * 2 + 2
    assert clock.errors == 0 and gpu.unfinished_elapsed_calls == 0


def test_sampled_steps_reach_the_viewer_at_the_expected_rate(tmp_path: Path) -> None:
    gpu = FakeCuda(costs=H200_COSTS_NS)
    clock = _clock(tmp_path, gpu)
    # k adapts while the loop runs (a descheduled moment on a shared machine raises it for a while):
    # the rate to expect is the one of the largest k in force, not of the last one.
    largest_every = 0
    for _ in range(1200):
        _short_steps(clock, gpu, 1)
        largest_every = max(largest_every, clock.gap.sampling.every)
    clock.before_next()
    clock.resolve_pending()
    steps = _steps(clock)
    timed = [s for s in steps if s.gpu_gap_ms is not None]
    untimed = [s for s in steps if s.gpu_gap_ms is None and s.step > 0]  # step 0: no step before it
    assert 2 <= clock.gap.sampling.every <= largest_every <= GPU_EVERY_MAX
    assert len(timed) >= len(steps) // (largest_every + 1) and len(timed) >= 20
    # Steps without a measured gap carry the full host clock and nothing of the GPU's.
    assert all(s.h2d_bytes == 4096 and s.samples == 8 and s.wall_ms > 0 for s in untimed)
    assert len(untimed) >= len(steps) // 3
    # The viewer judges by the GPU clock: the last 20+ timed steps are found among the ring's steps.
    clock_name, window = select_window(steps)
    assert clock_name == "gpu" and len(window) >= 20
    assert clock.writer is not None and clock.writer.words[wire.H_GPU_DROPPED] == 0


def test_long_steps_with_a_cheap_clock_are_all_timed(tmp_path: Path) -> None:
    gpu = FakeCuda(costs=H200_COSTS_NS)
    clock = _clock(tmp_path, gpu)
    # 12 ms steps with a 25% share: a budget of 3 ms per step, far above what a timed step costs the host
    # (~16 us on an H200, 25-40 us on the dev VM, a smoothed 250 us seen once on a loaded CI runner, where
    # a 1% share failed). The host spins rather than sleeps: after a sleep the first call can wait 100+ us
    # for the CPU back.
    clock.gap.sampling.budget_share = 0.25
    for _ in range(14):
        clock.before_next()
        clock.after_next([0])
        clock.work.copied(4096, False, False, 1_000, None)
        deadline = time.perf_counter_ns() + 12_000_000
        while time.perf_counter_ns() < deadline:
            pass
        gpu.host_work(12)
    clock.before_next()
    clock.resolve_pending()
    timed = [s for s in _steps(clock) if s.gpu_gap_ms is not None]
    assert len(timed) >= 11, (len(timed), clock.gap.sampling.every, clock.gap.sampling.cost_ns)


def test_sampled_steps_keep_their_gap(tmp_path: Path) -> None:
    gpu = FakeCuda()
    clock = _clock(tmp_path, gpu)
    clock.gap.sampling.enabled = False  # hold k where we put it
    clock.gap.sampling.every = 3
    for _ in range(30):
        clock.before_next()
        gpu.host_work(20)  # the loader blocks 20 ms
        clock.after_next([0] * 4)
        gpu.launch(2)
        clock.work.copied(4096, False, False, 5_000, None)
        gpu.launch(10)
        gpu.host_work(5.5)  # the GPU still has 6.5 ms queued when the next wait begins
    clock.before_next()
    gpu.host_work(100)
    clock.resolve_pending()
    steps = _steps(clock)[3:]
    timed = [s for s in steps if s.gpu_gap_ms is not None]
    assert len(timed) == pytest.approx(len(steps) / 3, abs=1)
    for s in timed:
        assert s.gpu_gap_ms == pytest.approx(20.0 - 6.5, abs=1e-6)
    gaps = {b.step - a.step for a, b in itertools.pairwise(timed)}
    assert gaps == {3}
    assert all(s.data_wait_ms >= 0 and s.h2d_bytes == 4096 for s in steps if s not in timed)
    assert gpu.unfinished_elapsed_calls == 0 and clock.errors == 0
    # 2 events per measured gap (``after`` at the end of the step before, ``first``), none on the others.
    assert gpu.records <= 2 * (len(timed) + 2)


def test_a_step_without_copies_still_gets_its_gap(tmp_path: Path) -> None:
    gpu = FakeCuda()
    clock = _clock(tmp_path, gpu)
    clock.gap.sampling.enabled = False  # every step timed
    for _ in range(20):
        clock.before_next()
        gpu.host_work(3)  # the GPU has drained 2 ms into the wait
        clock.after_next([0])
        gpu.launch(1)  # the batch was on the GPU already: kernels only
        gpu.host_work(1)
    clock.before_next()
    assert gpu.records <= 2 * 20 + 1
    timed = [s for s in _steps(clock) if s.gpu_gap_ms is not None]
    assert len(timed) == 19 and all(s.gpu_gap_ms == pytest.approx(3.0, abs=1e-6) for s in timed)
    assert all(s.h2d_bytes == 0 and not s.copied for s in timed)


def test_long_steps_whose_clock_costs_more_than_their_budget_are_sampled(tmp_path: Path) -> None:
    """H200, a job that syncs every step (6.9 ms steps, a blocking wait in next()): its clock's event calls
    cost ~130 us a step while long steps were all timed, ~1.9% of the job. Calls that cost that much now
    set k on long steps as on short ones, and the gap is still measured on the steps that are timed."""
    gpu = FakeCuda(costs={"record": 60_000, "query": 20_000, "elapsed_time": 20_000})
    clock = _clock(tmp_path, gpu)
    for _ in range(60):
        clock.before_next()
        time.sleep(0.006)  # the data wait: a real blocking wait, as in a DataLoader
        gpu.host_work(6.0)  # and the same wait on the fake GPU's timeline
        clock.after_next([_BATCH])
        clock.work.copied(4096, False, False, 1_000, None)
        gpu.host_work(1.0)
    clock.before_next()
    clock.resolve_pending()
    sampling = clock.gap.sampling
    # Budget: 0.25% of a ~7 ms step, ~18 us; a timed step's calls (two records, queries, an elapsed_time)
    # ~160 us: k ~ 9 here, and >= 2 even where a loaded machine stretches the steps to 30 ms.
    assert sampling.every >= 2, (sampling.every, sampling.cost_ns)
    timed = [s for s in _steps(clock)[10:] if s.gpu_gap_ms is not None]
    assert 1 <= len(timed) <= 50 // 2, len(timed)
    assert all(s.gpu_gap_ms == pytest.approx(6.0, abs=1e-6) for s in timed)  # the GPU idled through the wait
    assert clock.errors == 0


# -- the policy on its own: no CUDA, costs and step times given ------------------------------------------
def _drive(policy: GpuSampling, steps: int, step_ns: int, cost_ns: int) -> list[bool]:
    """``steps`` steps of ``step_ns`` each; a step that records ``after`` costs ``cost_ns`` of host time in
    CUDA calls. Which steps recorded it."""
    now, marked = 0, []
    for step in range(steps):
        marks = policy.step_opens()
        now += step_ns
        if marks:
            policy.step_closed(cost_ns, now, step)
        marked.append(marks)
    return marked


def test_the_policy_measures_every_step_while_it_warms_up_and_long_steps_it_can_afford() -> None:
    warming = GpuSampling()
    assert _drive(warming, 3, 1_000_000, 20_000) == [True, True, True]  # the first costs are cold caches
    affordable = GpuSampling()
    assert all(_drive(affordable, 50, 6_000_000, 12_000))  # budget 15 us a step: 12 us fits every step
    assert affordable.every == 1


def test_the_policy_keeps_long_steps_within_their_budget_too() -> None:
    policy = GpuSampling()
    marked = _drive(policy, 600, 6_000_000, 150_000)  # 6 ms steps, 150 us per measured step
    # Budget: 0.25% of 6 ms = 15 us a step, so one step in 10 on average.
    assert policy.every == 10
    tail = marked[-400:]
    assert sum(tail) * 150_000 / len(tail) <= 15_000 * 1.25


def test_the_policys_periods_do_not_lock_onto_a_loops_rhythm() -> None:
    """One slow worker in four makes every fourth step different: a fixed period of 4 would see only
    one phase of it. The periods vary around k, so every phase is measured, at about k's rate."""
    policy = GpuSampling()
    marked = _drive(policy, 2_000, 1_000_000, 10_000)  # budget 2.5 us a step: k = 4
    assert policy.every == 4
    phases = Counter(step % 4 for step, marks in enumerate(marked) if marks and step >= 100)
    assert set(phases) == {0, 1, 2, 3}
    assert min(phases.values()) >= 0.6 * max(phases.values()), phases
    assert sum(phases.values()) == pytest.approx(1_900 / 4, rel=0.15)


def test_the_policy_keeps_the_average_host_cost_within_its_budget_on_short_steps() -> None:
    policy = GpuSampling()
    marked = _drive(policy, 2_000, 200_000, 20_000)  # 0.2 ms steps, 20 us per measured step
    # Budget: max(1 us, 0.25% of 200 us = 0.5 us) = 1 us a step, so one step in 20 on average.
    assert policy.every == 20
    tail = marked[-1_600:]
    assert sum(tail) * 20_000 / len(tail) <= policy.budget_floor_ns * 1.2


def test_the_policy_never_waits_longer_than_its_cap_and_holds_still_when_off() -> None:
    policy = GpuSampling()
    _drive(policy, 400, 50_000, 500_000)  # a very expensive clock on tiny steps
    assert policy.every == GPU_EVERY_MAX
    held = GpuSampling(enabled=False)
    held.every = 3
    assert _drive(held, 9, 100_000, 90_000) == [True, False, False] * 3
    assert held.every == 3


def test_the_policys_draws_leave_the_jobs_random_numbers_alone() -> None:
    random.seed(7)
    expected = [random.random() for _ in range(3)]
    random.seed(7)
    policy = GpuSampling()
    assert sum(_drive(policy, 400, 1_000_000, 10_000)) > 0 and policy.every > 1  # periods were drawn
    assert [random.random() for _ in range(3)] == expected
