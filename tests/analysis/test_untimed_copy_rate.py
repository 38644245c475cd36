"""Copies nobody timed, estimated from the GPU's PCIe RX: the pageable rate the estimate assumes follows
the bytes each step moves (large pageable copies run at half the speed of mid-sized ones on an H200)."""

from __future__ import annotations

import dataclasses

from analysis.test_evidence_advice import _sole_user, _untimed_copies, _verdict
from ui.sample_states import host_state
from xfertop.analysis.steps import window_stats
from xfertop.analysis.verdict import Verdict
from xfertop.model.host import HostState
from xfertop.model.jobs import RankState


def _step_s(rank: RankState) -> float:
    stats = window_stats(rank.steps)
    assert stats is not None
    return stats.wall.p50_ms / 1000


def test_a_link_moving_a_large_batch_each_step_is_copy_bound_at_the_large_pageable_rate() -> None:
    # Scenario e on the H200 under xfertop.watch: 100 MB pageable batches, RX ~3.9 GB/s, kernels 25%
    # busy: at 15 GB/s the copies were guessed at 26% of the step (host-bound: wrong); at the 7 GB/s that
    # 100 MB pageable copies run at, 56%: the truth was 68%. Here 80 MB a step: 24% against 52%.
    rank = _untimed_copies()
    rx = 80e6 / _step_s(rank)
    verdict = _verdict(rank, _sole_user(rank, util=25.0, rx=rx))
    assert verdict.headline.startswith("copy-bound (likely): "), verdict.headline
    assert "pin_memory=True" in " ".join(verdict.advice)


def _without_link_traffic(rank: RankState, host: HostState | None = None) -> Verdict:
    """The verdict the same rank gets where its GPU's link receives nothing."""
    return _verdict(rank, _sole_user(rank, util=25.0, rx=0.0), host)


def test_the_same_rate_from_small_per_step_volumes_is_not_guessed_a_copy() -> None:
    # 20% of the 15 GB/s a mid-sized pageable copy reaches, in volumes under 64 MiB a step: under the 30%
    # bar of the pageable estimate, and at 7 GB/s it would have crossed it (43%): the size decides.
    rank = _untimed_copies()
    rx = 3.0e9
    assert rx * _step_s(rank) < 64 * 2**20
    verdict = _verdict(rank, _sole_user(rank, util=25.0, rx=rx))
    assert verdict.kind != "copy-bound", verdict.headline
    assert verdict.rule == _without_link_traffic(rank).rule


def test_a_job_whose_pinned_memory_holds_a_step_is_not_guessed_pageable() -> None:
    # The same 80 MB a step, from a job that pins (pin_memory=True: the reporter's pinned host memory
    # holds several batches): at link speed that is 6% of the step, no copy-bound guess.
    rank = dataclasses.replace(_untimed_copies(), pinned_host_bytes=512 * 2**20)
    rx = 80e6 / _step_s(rank)
    host = host_state()
    rank = dataclasses.replace(rank, host=host.hostname)
    verdict = _verdict(rank, _sole_user(rank, 25.0, rx), host)
    assert verdict.kind != "copy-bound", verdict.headline
    assert verdict.rule == _without_link_traffic(rank, host).rule
