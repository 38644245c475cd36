"""Which steps get the GPU's idle gap measured: one in ``every``, chosen so that the clock's own host
time in CUDA calls stays within budget.

A CUDA event record costs ~2.4 us of host time on an H200, query and elapsed_time ~0.3-1.5 us, so a
measured gap costs 5-10 us. The clock measures that host time itself (perf_counter around its CUDA
calls) and this policy picks ``every`` so that the average stays within max(GPU_BUDGET_FLOOR_NS,
GPU_BUDGET_SHARE of the step's wall time), long steps or short: one step in k on average (k <= GPU_EVERY_MAX,
so that a ring of 1024 steps always holds at least 32 measured gaps), each period drawn at random between 1
and 2k - 1 so that a loop's own rhythm (one slow worker in four) is not sampled at one phase only.
``XFERTOP_GPU_SAMPLING=off`` (``enabled=False``) holds ``every`` where it is, a fixed period: every step,
by default.
Pure bookkeeping: no CUDA here, so the policy is tested on its own (tests/reporter/test_gpu_sampling.py).
"""

from __future__ import annotations

import random

#: Average host time per step the GPU clock may add: the larger of a floor and a share of the step.
#: The floor counts only the CUDA calls' own time; on the H200 the Python around a timed step's calls
#: cost as much again (docs/reporter.md, session 9), so 1 us here is ~2 us a step in all. It binds only
#: on steps under 0.4 ms, where 1 us is 0.25%; k <= GPU_EVERY_MAX keeps 32 timed steps in a ring.
GPU_BUDGET_FLOOR_NS = 1_000
GPU_BUDGET_SHARE = 0.0025
GPU_EVERY_MAX = 32


class GpuSampling:
    __slots__ = (
        "_cost_samples",
        "_countdown",
        "_period_began_ns",
        "_period_began_step",
        "_random",
        "budget_floor_ns",
        "budget_share",
        "cost_ns",
        "enabled",
        "every",
        "spent_ns",
    )

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.every = 1
        self.budget_floor_ns = GPU_BUDGET_FLOOR_NS
        self.budget_share = GPU_BUDGET_SHARE
        self.cost_ns = 0.0  # smoothed host ns per measured step spent in CUDA calls
        #: Host ns in CUDA calls since the last measured step closed (charged to the next one).
        self.spent_ns = 0
        self._cost_samples = 0
        self._countdown = 1  # steps until the next one that records ``after``; 1: the next step does
        self._period_began_ns = 0  # when the last measured step closed
        self._period_began_step = 0  # and its index
        #: The periods' draws, from a generator of our own: the random module's would move the job's numbers.
        self._random = random.Random(0x6A9).random

    def step_opens(self) -> bool:
        """A step opens: whether it records ``after``, so that the next step gets its gap measured."""
        self._countdown -= 1
        if self._countdown > 0:
            return False
        every = self.every
        # A period uniform over 1 .. 2k - 1 averages k; held fixed when the policy is off.
        self._countdown = 1 + int(self._random() * (2 * every - 1)) if every > 1 and self.enabled else every
        return True

    def step_closed(self, spent_ns: int, now_ns: int, step: int) -> None:
        """Step ``step``, one that recorded ``after``, closed at ``now_ns``; ``spent_ns``: host ns in CUDA
        calls since the last such step closed. The rate is revised. (The steps between say nothing: their
        CUDA calls, if any, are added to ``spent_ns`` as they happen.)"""
        self.spent_ns = 0
        if self.enabled:
            self._choose(spent_ns, now_ns, step)

    def _choose(self, spent_ns: int, now_ns: int, step: int) -> None:
        self._cost_samples += 1
        if self._cost_samples <= 2:  # warm-up: the first events are created, caches are cold
            self._period_began_ns = now_ns
            self._period_began_step = step
            return
        cost = self.cost_ns
        # Smoothed; one sample counts at most twice the estimate (a descheduled thread is not our cost).
        cost = spent_ns if cost == 0.0 else 0.75 * cost + 0.25 * min(spent_ns, 2 * cost)
        self.cost_ns = cost
        steps = step - self._period_began_step
        if self._period_began_ns and steps:
            wall_per_step = (now_ns - self._period_began_ns) / steps
            budget = max(self.budget_floor_ns, self.budget_share * wall_per_step)
            # ceil(cost / budget), for long steps too: what the clock's calls cost is the job's loss, even
            # where they come just after a blocking wait and run cold (docs/reporter.md, "Sampling").
            every = min(GPU_EVERY_MAX, max(1, -int(-cost // budget)))
            if every != self.every:
                self.every = every
                self._countdown = min(self._countdown, every)
        self._period_began_ns = now_ns
        self._period_began_step = step
