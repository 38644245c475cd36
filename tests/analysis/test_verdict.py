"""Verdicts on recorded windows of each kind, the rules at their thresholds, and the JSON shape."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import get_args

import pytest
from step_records import step_record
from window_fixtures import WindowFixture, load_window, rank_state, window_names

from xfertop.analysis.evidence import Context
from xfertop.analysis.steps import window_stats
from xfertop.analysis.thresholds import INPUT_CRITICAL_SHARE, INPUT_WARN_SHARE
from xfertop.analysis.verdict import (
    RULES,
    Verdict,
    VerdictKind,
    job_verdict,
    judge,
    rank_verdict,
    window_or_early,
)
from xfertop.model.jobs import RankState, StepRecord

#: Windows whose right verdict the analysis does not give yet, with the src bug each shows. Strict: once
#: the bug is fixed the window passes, the test fails, and the window comes off this list.
SRC_BUGS: dict[str, str] = {}


def verdict_of(fixture: WindowFixture) -> Verdict:
    if len(fixture.ranks) > 1:
        return job_verdict(fixture.ranks)
    rank = fixture.ranks[0]
    return rank_verdict(
        rank.steps,
        dataloader_workers=rank.dataloader_workers,
        gpu_busy_share=fixture.context.get("gpu_busy_share"),
    )


def advice_text(verdict: Verdict) -> str:
    return " ".join(verdict.advice)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=SRC_BUGS[name]))
        if name in SRC_BUGS
        else name
        for name in window_names()
    ],
)
def test_each_recorded_window_gets_its_verdict(name: str) -> None:
    fixture = load_window(name)
    verdict = verdict_of(fixture)
    assert (verdict.kind, verdict.severity) == (fixture.expected_kind, fixture.expected_severity), (
        verdict.headline
    )
    assert verdict.headline.startswith(f"{verdict.kind}: ") or verdict.headline.startswith(
        f"{verdict.kind} (early, "
    )
    assert "\n" not in verdict.headline
    if verdict.kind in ("warming-up", "straggler"):  # written before the rules: named as their kind
        assert verdict.rule == verdict.kind
    else:
        rule = next(rule for rule in RULES if rule.name == verdict.rule)
        assert rule.kind == verdict.kind


def test_a_window_of_every_kind_is_on_file() -> None:
    """Every kind a rank or job can get, but host-bound: a GPU the host holds back is launch-bound or
    sync-bound where the step clock tells them apart, and host-bound only where no cause is large enough
    on its own (a window built for it below)."""
    kinds = {load_window(name).expected_kind for name in window_names()}
    assert kinds >= set(get_args(VerdictKind)) - {"host-bound"}


def test_the_demo_job_windows_were_recorded_from_real_runs() -> None:
    for name in ("recorded_cpu_input_bound", "recorded_cpu_compute_bound"):
        assert load_window(name).source.startswith("recorded"), name


# -- input-bound ----------------------------------------------------------------------------------------
def test_starved_demo_job_is_told_to_use_workers_and_move_decoding_off_the_main_process() -> None:
    fixture = load_window("recorded_cpu_input_bound")
    verdict = verdict_of(fixture)
    assert verdict.kind == "input-bound" and verdict.severity == "critical"
    assert "waits for the DataLoader" in verdict.headline and "num_workers=0" in verdict.headline
    assert "num_workers" in advice_text(verdict)
    assert "off the main process" in advice_text(verdict)
    assert verdict.evidence["clock"] == "cpu" and verdict.evidence["gpu_idle_share"] is None


def test_gpu_input_bound_speaks_of_the_idle_gap_and_asks_for_more_workers() -> None:
    verdict = verdict_of(load_window("input_bound_gpu"))
    assert "GPU sits idle" in verdict.headline
    assert "Raise num_workers above 2" in advice_text(verdict)
    assert "Do not tune PCIe" in advice_text(verdict)


def test_epoch_start_spikes_ask_for_persistent_workers_not_more_workers() -> None:
    verdict = verdict_of(load_window("input_bound_epoch_spikes"))
    assert "persistent_workers=True" in advice_text(verdict)
    assert "Raise num_workers" not in advice_text(verdict)


def test_bursty_waits_ask_for_a_deeper_prefetch() -> None:
    # One step in ten waits 40 ms, the others 3 ms; loss.item() drained the GPU, so it feels every wait.
    steps = []
    for i in range(5, 105):
        wait = 40.0 if i % 10 == 0 else 3.0
        steps.append(
            step_record(
                i, wall_ms=60.0, wait_ms=wait, copy_ms=0.1, gap_ms=wait, h2d_bytes=1 << 20, pinned=True
            )
        )
    verdict = rank_verdict(steps, dataloader_workers=4)
    assert verdict.kind == "input-bound"
    assert "prefetch_factor" in advice_text(verdict)


def test_workers_too_slow_to_keep_up_wait_in_a_rhythm_that_no_deeper_prefetch_absorbs() -> None:
    # Two workers flat out, delivering in turn: every step waits (median 90 ms of a 95 ms step), a third
    # of them 280 ms. p95 is 3x the median, but the median step already waits: a deeper queue cannot fill
    # faster than the workers produce (a trial's prefetch_factor=4 ran 22% slower).
    steps = []
    for i in range(5, 105):
        wait = 280.0 if i % 3 == 0 else 90.0
        steps.append(step_record(i, wait_ms=wait, model_ms=5.0))
    verdict = rank_verdict(steps, dataloader_workers=2)
    assert verdict.kind == "input-bound"
    assert "prefetch_factor" not in advice_text(verdict)


def test_pageable_input_bound_gpu_job_is_told_to_pin_and_copy_non_blocking() -> None:
    steps = [
        step_record(
            i,
            wall_ms=100.0,
            wait_ms=30.0,
            copy_ms=2.0,
            gap_ms=30.0,
            h2d_bytes=1 << 24,
            samples=64,
            pageable_non_blocking=True,
        )
        for i in range(40)
    ]
    verdict = rank_verdict(steps, dataloader_workers=0)
    assert verdict.kind == "input-bound"
    assert "pin_memory=True" in advice_text(verdict) and "non_blocking=True" in advice_text(verdict)


def test_the_larger_of_input_and_copy_wins() -> None:
    def steps(wait_ms: float, copy_ms: float) -> list[StepRecord]:
        return [
            step_record(
                i, wall_ms=100.0, wait_ms=wait_ms, copy_ms=copy_ms, gap_ms=wait_ms, h2d_bytes=256 << 20
            )
            for i in range(40)
        ]

    assert rank_verdict(steps(25.0, 15.0)).kind == "input-bound"
    assert rank_verdict(steps(15.0, 25.0)).kind == "copy-bound"


# -- the rule of the house ------------------------------------------------------------------------------
def test_a_large_cpu_wait_with_no_gpu_idle_gap_is_not_starvation_and_says_so() -> None:
    verdict = verdict_of(load_window("compute_bound_hidden_wait"))  # with NVML's ~100% busy
    assert verdict.kind == "compute-bound"
    assert verdict.evidence["data_wait_share"] > 0.25
    assert verdict.evidence["gpu_idle_share"] < 0.01
    assert verdict.evidence["hidden_wait"] is True
    assert "not starving" in verdict.headline
    assert "did not starve" in advice_text(verdict)


def test_a_hidden_wait_without_nvml_is_healthy_not_compute_bound_and_still_not_starving() -> None:
    """Without NVML the GPU's busy share is not known: compute-bound then rests on the host's model and
    sync share (~65% here, the rest being the wait), which is not 90%."""
    steps = load_window("compute_bound_hidden_wait").ranks[0].steps
    verdict = rank_verdict(steps, dataloader_workers=6)
    assert verdict.kind == "healthy" and verdict.rule == "healthy"
    assert verdict.evidence["hidden_wait"] is True and "not starving" in verdict.headline


def test_the_same_wait_felt_by_the_gpu_is_input_bound() -> None:
    """The hidden wait's steps, had the GPU drained before each wait (a gap as long as the wait)."""
    fixture = load_window("compute_bound_hidden_wait")
    felt = [replace(s, gpu_gap_ms=s.data_wait_ms) for s in fixture.ranks[0].steps]
    verdict = rank_verdict(felt, dataloader_workers=6, gpu_busy_share=0.6)
    assert verdict.kind == "input-bound" and verdict.evidence["hidden_wait"] is False


def test_without_measured_gaps_nvml_busy_bounds_what_a_wait_can_have_starved() -> None:
    """No idle gap measured (attach, `--no-copy-timing`): the GPU idled at most 1 - busy of the time, so a
    35% wait beside a GPU busy 97% was hidden by queued work (H200, scenario k under attach read
    "input-bound ... Raise num_workers" with NVML at 99.6%); beside a GPU busy 40% it is input-bound."""
    steps = [replace(s, gpu_gap_ms=None) for s in load_window("compute_bound_hidden_wait").ranks[0].steps]
    busy = rank_verdict(steps, dataloader_workers=6, gpu_busy_share=0.97)
    assert busy.kind == "compute-bound" and busy.evidence["hidden_wait"] is True, busy.headline
    assert "35% DataLoader wait is hidden by queued GPU work" in busy.headline
    assert "Raise num_workers" not in advice_text(busy)
    idle = rank_verdict(steps, dataloader_workers=6, gpu_busy_share=0.4)
    assert idle.kind == "input-bound" and idle.evidence["hidden_wait"] is False, idle.headline
    assert rank_verdict(steps, dataloader_workers=6).kind == "input-bound"  # NVML silent: the wait stands


def test_compute_bound_says_the_pipeline_is_fine_and_not_to_tune_pcie() -> None:
    verdict = verdict_of(load_window("recorded_cpu_compute_bound"))
    assert verdict.kind == "compute-bound"
    assert "input pipeline keeps up" in advice_text(verdict)
    assert "Do not tune PCIe" in advice_text(verdict)
    assert "not starving" not in verdict.headline  # on the host's clock alone no wait can be hidden


def test_compute_bound_advice_names_remedies_for_the_device_the_job_computes_on() -> None:
    # Session 47's trial: an autoencoder under torch.autocast("cpu", dtype=torch.bfloat16) read "make the
    # step itself cheaper: mixed precision" on every face; on that CPU (no AMX, no AVX512-BF16) bf16 made
    # each step 5x slower than float32. A CPU's remedies are its own; a GPU's name bf16 autocast.
    stats = window_stats(load_window("recorded_cpu_compute_bound").ranks[0].steps)
    assert stats is not None
    on_cpu = advice_text(judge(stats, dataloader_workers=0, context=Context(on_gpu=False)))
    assert "torch.compile" in on_cpu and "slower than float32" in on_cpu and "mixed precision" not in on_cpu
    on_gpu = advice_text(judge(stats, dataloader_workers=0, context=Context(on_gpu=True)))
    assert "mixed precision (bf16 autocast" in on_gpu and "slower than float32" not in on_gpu


def test_compute_bound_without_a_dataloader_names_no_loader_setting() -> None:
    # Session 29's j60: batches sliced from one tensor in memory, no DataLoader (its steps are counted at
    # the optimizer's): "more workers, pinning or prefetching" named settings the job does not have.
    rank = load_window("recorded_cpu_compute_bound").ranks[0]
    verdict = rank_verdict(rank.steps, dataloader_workers=None)
    assert verdict.kind == "compute-bound"
    assert "builds its own batches (no DataLoader) fast enough" in advice_text(verdict)
    assert "more workers" not in advice_text(verdict)
    with_loader = rank_verdict(rank.steps, dataloader_workers=0)
    assert "input pipeline keeps up" in advice_text(with_loader), with_loader.advice


# -- copy-bound -----------------------------------------------------------------------------------------
def test_pageable_non_blocking_copies_are_named_with_the_fix() -> None:
    verdict = verdict_of(load_window("copy_bound_pageable"))
    assert "non_blocking from pageable memory" in verdict.headline
    assert "pin_memory=True" in advice_text(verdict)
    assert verdict.evidence["pageable_non_blocking_step_fraction"] == 1.0
    assert verdict.evidence["pinned_step_fraction"] == 0.0
    # The copy calls of steps whose stream had drained: the GPU's kernels idled through them.
    assert verdict.evidence["gpu_idle_in"]["copy"] > 0.2


def test_pinned_copy_bound_job_is_told_to_overlap_and_move_fewer_bytes() -> None:
    fixture = load_window("copy_bound_pageable")
    pinned = [replace(s, pinned=True, pageable_non_blocking=False) for s in fixture.ranks[0].steps]
    verdict = rank_verdict(pinned)
    assert verdict.kind == "copy-bound" and "pageable" not in verdict.headline
    assert "already pinned" in advice_text(verdict) and "fewer bytes" in advice_text(verdict)


def test_a_copy_time_the_bytes_cannot_explain_is_not_copy_bound() -> None:
    """The same long copy calls moving 1 MiB a step: even at 1 GB/s that is ~1% of the step, so the
    time in the copy call is something else (the call waited for the stream): no copy-bound."""
    steps = load_window("copy_bound_pageable").ranks[0].steps
    assert rank_verdict(steps).rule == "copy-bound"
    few_bytes = [replace(s, h2d_bytes=1 << 20) for s in steps]
    verdict = rank_verdict(few_bytes)
    assert verdict.kind != "copy-bound" and verdict.rule != "copy-bound", verdict.headline
    assert verdict.evidence["gpu_idle_in"]["copy"] > 0.2  # the share is there, only not believed


def test_a_copy_share_the_bytes_just_explain_is_believed() -> None:
    # 20% of each 100 ms step in copy calls, 20 MB a step: 0.2 GB/s, explained at the 1 GB/s floor.
    def steps(h2d_bytes: int) -> list[StepRecord]:
        return [
            step_record(i, wall_ms=100.0, wait_ms=1.0, copy_ms=20.0, gap_ms=1.0, h2d_bytes=h2d_bytes)
            for i in range(40)
        ]

    assert rank_verdict(steps(20_000_000)).kind == "copy-bound"
    # 10 MB a step explains 10% (+5% slack): 20% is not believed.
    assert rank_verdict(steps(10_000_000)).kind != "copy-bound"


# -- syncs, the loop's own work, dispatch -------------------------------------------------------------
def test_a_sync_every_step_then_host_work_is_sync_bound() -> None:
    """loss.item() drains the GPU's queue, and the logging after it runs while the GPU has nothing to
    do: the measured gaps fall in the loop's work after the step, in steps that synced."""
    fixture = load_window("sync_bound")
    verdict = verdict_of(fixture)
    assert (verdict.kind, verdict.severity, verdict.rule) == ("sync-bound", "critical", "sync-then-host-work")
    assert "syncs with the GPU every step" in verdict.headline
    assert "loss.item()" in advice_text(verdict) and "log every" in advice_text(verdict)
    assert verdict.evidence["synced_step_fraction"] == 1.0
    idle_in = verdict.evidence["gpu_idle_in"]
    assert idle_in["loop_post"] > 0.3 and idle_in["loop_post"] == max(idle_in.values())


def test_host_work_after_the_step_without_a_sync_is_loop_bound_after_the_step() -> None:
    steps = [replace(s, synced=False, sync_ms=0.0) for s in load_window("sync_bound").ranks[0].steps]
    verdict = rank_verdict(steps)
    assert (verdict.kind, verdict.rule) == ("loop-bound", "loop-work")
    assert "after the step" in verdict.headline
    assert "every N steps" in advice_text(verdict)


def test_a_sync_that_finds_the_gpu_drained_leaves_the_work_after_it_loop_bound() -> None:
    """Scenario s on the H200: one loss.item() a step on a small model, then 77% of the step logging in
    Python. The item() waits for nothing (sync 0% of the step), so dropping it would buy nothing: the
    loop's work after the step holds the GPU idle, not the sync. It read sync-bound before."""
    steps = [
        replace(s, sync_ms=0.05, wall_ms=s.wall_ms - s.sync_ms + 0.05)
        for s in load_window("sync_bound").ranks[0].steps
    ]
    verdict = rank_verdict(steps)
    assert (verdict.kind, verdict.rule) == ("loop-bound", "loop-work"), verdict.headline
    assert "after the step" in verdict.headline and "every N steps" in advice_text(verdict)
    assert verdict.evidence["synced_step_fraction"] == 1.0


def test_a_job_is_sync_bound_when_its_ranks_sync_then_work_on_the_host() -> None:
    rank = load_window("sync_bound").ranks[0]
    ranks = [replace(rank, rank=r, pid=rank.pid + r) for r in range(2)]
    assert job_verdict(ranks).kind == "sync-bound"
    verdict = job_verdict(ranks, gpu_busy_share_by_pid={rank.pid: 0.45, rank.pid + 1: 0.5})
    assert verdict.kind == "sync-bound" and verdict.evidence["gpu_busy_share"] == 0.475


def test_loop_work_before_the_model_is_loop_bound_and_told_to_move_into_the_dataset() -> None:
    verdict = verdict_of(load_window("loop_bound_augment"))
    assert (verdict.kind, verdict.severity, verdict.rule) == ("loop-bound", "critical", "loop-work")
    assert "before the model" in verdict.headline and "the GPU is busy 2%" in verdict.headline
    assert "__getitem__" in advice_text(verdict)
    assert "on the GPU after the copy" in advice_text(verdict)
    assert verdict.evidence["host_loop_pre_share"] > 0.8


def test_loop_work_before_the_model_over_a_loader_without_workers_is_told_to_give_it_workers() -> None:
    """Session 46's CPU trial: augmentation in the loop body, its DataLoader at num_workers=0. "Move it into
    the Dataset's __getitem__ so the DataLoader workers run it" alone changes nothing there: with no
    workers the main process runs __getitem__ too."""
    steps = [
        step_record(i, wait_ms=0.3, loop_pre_ms=9.0, model_ms=11.0, partitioned=True) for i in range(120)
    ]
    advice = {workers: " ".join(rank_verdict(steps, dataloader_workers=workers).advice) for workers in (0, 4)}
    assert rank_verdict(steps, dataloader_workers=0).kind == "loop-bound"
    assert "give the DataLoader workers (num_workers > 0" in advice[0], advice[0]
    assert "num_workers > 0" not in advice[4] and "so the DataLoader workers run it" in advice[4], advice[4]


def test_on_a_cpu_the_loops_own_work_is_read_from_the_hosts_parts() -> None:
    """`xfertop run` on a CPU: no gap, the loop's own share of the host's step is the cause."""
    steps = [
        step_record(i, wait_ms=1.0, loop_pre_ms=30.0, model_ms=69.0, partitioned=True) for i in range(5, 45)
    ]
    verdict = judge(window_stats(steps), context=Context(on_gpu=False))  # type: ignore[arg-type]
    assert (verdict.kind, verdict.rule) == ("loop-bound", "loop-work")
    assert "it takes 30% of each step" in verdict.headline
    assert "on the GPU" not in advice_text(verdict)


@pytest.mark.parametrize(
    ("loop_ms", "kind"), [(9.9, "compute-bound"), (10.0, "loop-bound"), (20.0, "loop-bound")]
)
def test_loop_bound_threshold(loop_ms: float, kind: str) -> None:
    steps = [
        step_record(i, wall_ms=100.0, loop_post_ms=loop_ms, gap_ms=loop_ms, partitioned=True)
        for i in range(40)
    ]
    assert rank_verdict(steps).kind == kind


def _dispatching(count: int = 40) -> list[StepRecord]:
    """`xfertop run`, the host in the model 95% of each step, the GPU never drained at a step's first
    work (gap 0): only NVML can say whether the GPU ran all that time."""
    return [
        step_record(
            i,
            wait_ms=1.0,
            loop_pre_ms=0.5,
            copy_ms=0.5,
            model_ms=95.0,
            sync_ms=2.5,
            loop_post_ms=0.5,
            gap_ms=0.0,
            h2d_bytes=1 << 20,
            pinned=True,
            partitioned=True,
            synced=True,
        )
        for i in range(5, 5 + count)
    ]


def test_a_gpu_busy_15_percent_while_the_host_dispatches_the_model_is_launch_bound() -> None:
    verdict = rank_verdict(_dispatching(), gpu_busy_share=0.15)
    assert (verdict.kind, verdict.severity, verdict.rule) == ("launch-bound", "critical", "launch-bound")
    assert "busy only 15%" in verdict.headline and "(idle 84% inside it)" in verdict.headline
    assert "torch.compile" in advice_text(verdict) and "input pipeline is not the cause" in advice_text(
        verdict
    )
    assert rank_verdict(_dispatching(), gpu_busy_share=0.6).severity == "warn"


def test_a_busy_gpu_held_by_the_model_names_the_model_and_its_syncs_as_the_row_gives_them() -> None:
    """Session 33's clip + isfinite job on the H100: GPU busy 79%, the host in the model and its syncs
    91% of each step. One sum, "the model takes 91%", stood above a summary and a jobs row that gave the
    model 82% and the syncs 9%."""
    steps = [
        step_record(
            i,
            wait_ms=5.0,
            loop_pre_ms=1.0,
            copy_ms=2.0,
            model_ms=82.0,
            sync_ms=9.0,
            loop_post_ms=1.0,
            gap_ms=0.0,
            h2d_bytes=1 << 20,
            pinned=True,
            partitioned=True,
            synced=True,
        )
        for i in range(5, 45)
    ]
    verdict = rank_verdict(steps, gpu_busy_share=0.79)
    assert verdict.kind == "compute-bound"
    assert "the model takes 82% and the syncs 9% of each step, the GPU is busy 79%" in verdict.headline
    assert "91%" not in verdict.headline
    # Under watch() the model's calls are not seen: the model and the loop are one part.
    unseen = [replace(step, partitioned=False) for step in steps]
    watched = rank_verdict(unseen, gpu_busy_share=0.79)
    assert "the model and the loop take 84% and the syncs 9% of each step" in watched.headline, (
        watched.headline
    )


def test_the_small_kernels_window_is_launch_bound_by_its_nvml_busy_share() -> None:
    fixture = load_window("launch_bound_small_kernels")
    assert verdict_of(fixture).rule == "launch-bound"
    # The same steps with the GPU busy as long as the host dispatches: compute-bound.
    assert rank_verdict(fixture.ranks[0].steps, gpu_busy_share=0.95).kind == "compute-bound"


def test_kernels_idle_inside_synchronous_pageable_copies_are_copy_bound_not_launch_bound() -> None:
    """Recorded on the H200 (scenario d, pageable, num_workers=0): the host sits in the copy calls 82% of
    each step and in the model 17%, NVML reads the GPU busy 36%, and the stream never drained at a step's
    first work (its first work is the copy). NVML counts kernels only, so the 64% it calls idle fell in
    the copies, not in the model's dispatch."""
    steps = [
        step_record(
            i,
            wait_ms=0.5,
            copy_ms=82.0,
            model_ms=17.0,
            loop_post_ms=0.5,
            gap_ms=0.0,
            h2d_bytes=101_000_000,
            partitioned=True,
        )
        for i in range(5, 45)
    ]
    verdict = rank_verdict(steps, gpu_busy_share=0.36)
    assert (verdict.kind, verdict.rule) == ("copy-bound", "copy-bound"), verdict.headline
    assert "pin_memory=True" in advice_text(verdict)
    # Kernels that ran while the host was in the copy calls stay the GPU's: with the GPU busy 80% the
    # copies hold only the 20% NVML calls idle.
    busy = rank_verdict(steps, gpu_busy_share=0.8)
    assert "copies take 20%" in busy.headline, busy.headline


def test_compute_bound_on_a_gpu_needs_nvml_busy_where_nvml_measures_it() -> None:
    steps = _dispatching()
    assert rank_verdict(steps).kind == "compute-bound"  # not measured: the host's model and sync share
    assert rank_verdict(steps, gpu_busy_share=0.92).kind == "compute-bound"
    # Busy 85% with the host's step the model's (95% model, 2.5% sync): the GPU's idle is inside the
    # model, not a healthy balance (issue 20: no "healthy" with the GPU idle). Below 70%: launch-bound.
    busy_85 = rank_verdict(steps, gpu_busy_share=0.85)
    assert (busy_85.kind, busy_85.rule) == ("compute-bound", "compute-bound"), busy_85.headline
    assert "model takes 95% and the syncs 2%" in busy_85.headline and "busy 85%" in busy_85.headline
    assert "torch.compile" in advice_text(busy_85)


def test_a_busy_gpu_beside_a_host_step_with_no_dominant_part_reads_healthy() -> None:
    """Busy 80%, the host's step split over wait, loop, copy and model with none past its bar and the
    model under 90%: nothing to name."""
    steps = [
        step_record(
            i,
            wait_ms=6.0,
            loop_pre_ms=3.0,
            copy_ms=4.0,
            model_ms=84.0,
            sync_ms=0.0,
            loop_post_ms=3.0,
            gap_ms=0.0,
            h2d_bytes=64 << 20,
            pinned=True,
            partitioned=True,
        )
        for i in range(5, 45)
    ]
    verdict = rank_verdict(steps, gpu_busy_share=0.8)
    assert (verdict.kind, verdict.rule) == ("healthy", "healthy"), verdict.headline


def test_a_gpu_busy_below_half_vetoes_compute_bound() -> None:
    """The host's model share says compute-bound; NVML says the GPU is busy 45%: it is not."""
    verdict = rank_verdict(_dispatching(), gpu_busy_share=0.45)
    assert verdict.kind != "compute-bound", verdict.headline
    assert verdict.severity == "critical" and "45%" in verdict.headline
    assert verdict.evidence["compute_share"] > 0.9 and verdict.evidence["gpu_busy_share"] == 0.45


def test_a_gpu_held_back_with_no_cause_large_enough_is_host_bound() -> None:
    """NVML 65%, and the GPU's idle spread over the wait, the loop, copies and dispatch, none of them
    10% of the step: the host holds the GPU back, and both usual causes are named."""
    steps = []
    for i in range(5, 45):
        steps.append(
            step_record(
                i,
                wall_ms=100.0,
                wait_ms=9.0,
                loop_pre_ms=5.0,
                copy_ms=9.0,
                loop_post_ms=4.0,
                gap_ms=18.0,  # its loop work before (5), its wait (9), the step before's work after (4)
                h2d_bytes=100_000_000,
                partitioned=True,
            )
        )
    verdict = rank_verdict(steps, gpu_busy_share=0.65)
    assert (verdict.kind, verdict.severity, verdict.rule) == ("host-bound", "warn", "gpu-starved")
    assert "loss.item()" in advice_text(verdict) and "torch.compile" in advice_text(verdict)


def test_under_watch_a_gpu_held_back_by_the_host_is_host_bound_not_launch_bound() -> None:
    """loss.item() then ~40 ms of logging every step, under xfertop.watch: no model calls or syncs are
    seen, so the host's 'model' is everything but the wait and the copies, and the gap (measured at the
    batch's arrival) falls in it. `xfertop run` reads the same loop sync-bound; under watch() the step
    clock cannot tell syncs and logging from dispatch, and the verdict that names both causes is
    host-bound, not launch-bound ("many small kernels", "the input pipeline is not the cause")."""
    steps = [
        step_record(i, wall_ms=100.0, wait_ms=1.0, copy_ms=0.5, gap_ms=41.0, h2d_bytes=1 << 20, pinned=True)
        for i in range(5, 45)
    ]
    verdict = rank_verdict(steps, gpu_busy_share=0.3)
    assert verdict.kind == "host-bound", verdict.headline


def test_idle_inside_the_model_of_a_job_whose_optimizer_steps_host_memory_is_the_cpu_step() -> None:
    """A hand-made CPU offload of AdamW on the GPU machine (docs/measurements/cpu-2026-12-05-s33/jobs/
    j85_cpu_offload_adam.py): the GPU idles while the host is in the model's step, as with many small
    kernels, but the host is doing the optimizer's arithmetic. Without the flag the same window is
    launch-bound."""
    fixture = load_window("launch_bound_small_kernels")
    steps, busy = list(fixture.ranks[0].steps), fixture.context.get("gpu_busy_share")
    offloaded = judge(window_stats(steps), gpu_busy_share=busy, context=Context(cpu_optimizer=True))
    assert (offloaded.kind, offloaded.rule) == ("host-bound", "cpu-optimizer"), offloaded.headline
    assert "its optimizers step parameters held in host memory" in offloaded.headline
    advice = advice_text(offloaded)
    assert "runs on the CPU while the GPU waits" in advice and "torch.compile" not in advice
    assert judge(window_stats(steps), gpu_busy_share=busy, context=Context()).rule == "launch-bound"
    # A CPU job's optimizer always steps host memory: it says nothing there, whatever the busy share.
    on_cpu = judge(
        window_stats(steps), gpu_busy_share=busy, context=Context(on_gpu=False, cpu_optimizer=True)
    )
    assert on_cpu.rule != "cpu-optimizer"


# -- every rule ---------------------------------------------------------------------------------------
def _window_for(rule: str) -> tuple[list[StepRecord], float | None, Context]:
    """A window built for ``rule``: its steps, NVML's busy share, the context."""
    if rule == "untimed-copies":
        # xfertop.watch, copies not timed: NVML (kernels only) reads 5% while the link receives 9 GB/s.
        steps = [step_record(i, wall_ms=25.0, wait_ms=0.3, gap_ms=0.2) for i in range(5, 45)]
        context = Context(copies_measured=False, gpu_rx_bytes_per_s=9e9, link_bytes_per_s=63e9)
        return steps, 0.05, context
    if rule == "gpu-starved":
        steps = [
            step_record(
                i,
                wall_ms=100.0,
                wait_ms=9.0,
                loop_pre_ms=5.0,
                copy_ms=9.0,
                loop_post_ms=4.0,
                gap_ms=18.0,
                h2d_bytes=100_000_000,
                partitioned=True,
            )
            for i in range(5, 45)
        ]
        return steps, 0.65, Context()
    if rule == "cpu-optimizer":
        # The small kernels' window (GPU idle inside the model's step) of a job whose optimizer steps
        # parameters held in host memory.
        fixture = load_window("launch_bound_small_kernels")
        busy = fixture.context.get("gpu_busy_share")
        return list(fixture.ranks[0].steps), busy, Context(cpu_optimizer=True)
    name = {
        "input-bound": "input_bound_gpu",
        "sync-then-host-work": "sync_bound",
        "loop-work": "loop_bound_augment",
        "copy-bound": "copy_bound_pageable",
        "launch-bound": "launch_bound_small_kernels",
        "compute-bound": "compute_bound_hidden_wait",
        "healthy": "healthy_gpu",
    }[rule]
    fixture = load_window(name)
    return list(fixture.ranks[0].steps), fixture.context.get("gpu_busy_share"), Context()


def test_every_rule_has_a_window_built_for_it() -> None:
    for rule in RULES:
        _window_for(rule.name)  # a KeyError names the rule without one


@pytest.mark.parametrize("rule", [rule.name for rule in RULES])
def test_each_rule_fires_on_the_window_built_for_it(rule: str) -> None:
    steps, busy, context = _window_for(rule)
    verdict = judge(window_stats(steps), gpu_busy_share=busy, context=context)  # type: ignore[arg-type]
    assert verdict.rule == rule, verdict.headline
    assert verdict.kind == next(r.kind for r in RULES if r.name == rule)
    assert verdict.to_dict()["rule"] == rule


def test_the_rules_are_ordered_as_documented() -> None:
    assert [rule.name for rule in RULES] == [
        "input-bound",
        "sync-then-host-work",
        "loop-work",
        "copy-bound",
        "untimed-copies",
        "cpu-optimizer",
        "launch-bound",
        "gpu-starved",
        "compute-bound",
        "healthy",
    ]


# -- thresholds -----------------------------------------------------------------------------------------
def idle_window(idle_share: float) -> list[StepRecord]:
    """GPU steps whose measured gap is all of their wait (the GPU felt it whole)."""
    idle_ms = 100.0 * idle_share
    return [step_record(i, wall_ms=100.0, wait_ms=idle_ms, gap_ms=idle_ms) for i in range(40)]


@pytest.mark.parametrize(
    ("idle_share", "kind", "severity"),
    [
        (INPUT_WARN_SHARE - 0.001, "compute-bound", "info"),
        (INPUT_WARN_SHARE, "input-bound", "warn"),
        (INPUT_CRITICAL_SHARE - 0.001, "input-bound", "warn"),
        (INPUT_CRITICAL_SHARE, "input-bound", "critical"),
    ],
)
def test_input_bound_thresholds(idle_share: float, kind: str, severity: str) -> None:
    verdict = rank_verdict(idle_window(idle_share))
    assert (verdict.kind, verdict.severity) == (kind, severity)


def test_warming_up_counts_steps_past_warm_up() -> None:
    verdict = verdict_of(load_window("warming_up"))
    assert verdict.headline == "warming-up: 3 of the 5 steps a first verdict needs"
    assert verdict.advice == ()


def test_a_first_verdict_comes_early_and_says_so() -> None:
    steps = load_window("compute_bound_hidden_wait").ranks[0].steps
    # 9 steps (of a run long past warm-up): fewer than a full window's 20
    early = rank_verdict(steps[:9], gpu_busy_share=0.99)
    assert early.kind == "compute-bound" and early.evidence["early"] is True
    assert early.headline.startswith("compute-bound (early, 9 steps): ")
    full = rank_verdict(steps, gpu_busy_share=0.99)
    assert full.evidence["early"] is False and "early" not in full.headline


def test_an_early_verdict_keeps_its_rule() -> None:
    steps = load_window("compute_bound_hidden_wait").ranks[0].steps
    assert rank_verdict(steps[:9], gpu_busy_share=0.99).rule == "compute-bound"


# -- jobs -----------------------------------------------------------------------------------------------
def test_a_straggler_is_named_with_its_rank() -> None:
    verdict = verdict_of(load_window("straggler_ddp4"))
    assert verdict.kind == "straggler"
    assert "rank 2" in verdict.headline
    assert verdict.evidence["straggler_rank"] == 2
    assert verdict.evidence["victim_compute_excess_share"] > 0.2
    assert "rank 2" in advice_text(verdict)


def _fed(starved: RankState, *, sync: bool) -> tuple[StepRecord, ...]:
    """An independent rank fed as fast as its GPU runs (30 ms a step): its host waits for the GPU in a
    loss.item() after the model (``sync``) or, without one, in the launch queue inside the model."""
    steps = []
    for s in starved.steps:
        model_ms, sync_ms = (6.0, 23.0) if sync else (29.0, 0.0)
        steps.append(
            step_record(
                s.step,
                wait_ms=0.4,
                loop_pre_ms=0.3,
                copy_ms=0.03,
                model_ms=model_ms,
                sync_ms=sync_ms,
                loop_post_ms=0.2,
                gap_ms=0.0,
                h2d_bytes=s.h2d_bytes,
                samples=s.samples,
                pinned=True,
                partitioned=True,
                synced=sync,
            )
        )
    return tuple(steps)


def test_one_slow_rank_that_nobody_waits_for_is_not_a_straggler_nor_a_job_wide_bottleneck() -> None:
    """Independent ranks (no collectives) that sync every step: nobody waits for the starved one, so the
    median rank speaks for the job."""
    starved = load_window("input_bound_gpu").ranks[0]
    fed_steps = _fed(starved, sync=True)
    ranks = [replace(starved, rank=r, steps=fed_steps) for r in (0, 1, 3)] + [replace(starved, rank=2)]
    verdict = job_verdict(ranks)
    assert verdict.kind == "compute-bound", verdict.headline
    assert verdict.evidence["ranks"] == 4


def test_independent_fed_ranks_that_wait_in_the_launch_queue_are_no_victims() -> None:
    starved = load_window("input_bound_gpu").ranks[0]
    fed_steps = _fed(starved, sync=False)
    ranks = [replace(starved, rank=r, steps=fed_steps) for r in (0, 1, 3)] + [replace(starved, rank=2)]
    assert job_verdict(ranks).kind != "straggler"


def test_a_single_rank_job_gets_the_rank_verdict() -> None:
    rank = load_window("input_bound_gpu").ranks[0]
    assert job_verdict([rank]).kind == rank_verdict(rank.steps).kind == "input-bound"


def test_a_jobs_verdict_keeps_the_rule_that_wrote_it() -> None:
    rank = load_window("input_bound_gpu").ranks[0]
    assert job_verdict([rank]).rule == rank_verdict(rank.steps).rule == "input-bound"
    assert verdict_of(load_window("straggler_ddp4")).rule == "straggler"
    assert job_verdict([rank_state(0, [], None)]).rule == "warming-up"


def test_a_job_of_ranks_still_warming_up_is_warming_up() -> None:
    rank = rank_state(0, [], None)
    assert job_verdict([rank, replace(rank, rank=1)]).kind == "warming-up"


# -- JSON -----------------------------------------------------------------------------------------------
def test_to_dict_is_the_documented_json_shape() -> None:
    verdict = verdict_of(load_window("copy_bound_pageable"))
    as_json = json.loads(json.dumps(verdict.to_dict()))
    assert set(as_json) == {"kind", "severity", "headline", "evidence", "advice", "rule"}
    assert as_json["kind"] == "copy-bound" and as_json["severity"] == "critical"
    assert as_json["rule"] == "copy-bound"
    assert isinstance(as_json["advice"], list) and all(isinstance(a, str) for a in as_json["advice"])
    for key in (
        "data_wait_share",
        "copy_share",
        "compute_share",
        "gpu_idle_share",
        "data_wait_p50_ms",
        "data_wait_p95_ms",
        "copy_p50_ms",
        "copy_p95_ms",
        "compute_p50_ms",
        "compute_p95_ms",
        "gpu_idle_p50_ms",
        "gpu_idle_p95_ms",
        "samples_per_s",
        "h2d_bytes_per_s",
        "partitioned",
        "synced_step_fraction",
        "host_wait_share",
        "host_loop_pre_share",
        "host_copy_share",
        "host_model_share",
        "host_sync_share",
        "host_loop_post_share",
    ):
        assert key in as_json["evidence"], key
    assert set(as_json["evidence"]["gpu_idle_in"]) == {"wait", "loop_pre", "copy", "loop_post", "model"}


def test_gpu_idle_in_is_null_without_measured_gaps() -> None:
    verdict = verdict_of(load_window("recorded_cpu_input_bound"))
    assert verdict.evidence["gpu_idle_in"] is None and verdict.evidence["gpu_idle_share"] is None


HOST_PARTS = ("wait", "loop_pre", "copy", "model", "sync", "loop_post")


@pytest.mark.parametrize("name", [n for n in window_names() if n != "warming_up"])
def test_the_host_parts_in_the_evidence_add_up_to_the_step(name: str) -> None:
    fixture = load_window(name)
    verdict = verdict_of(fixture)
    total = sum(verdict.evidence[f"host_{part}_share"] for part in HOST_PARTS)
    assert total == pytest.approx(1.0, abs=1e-3)
    assert verdict.evidence["host_model_share"] == verdict.evidence["compute_share"]
    assert verdict.evidence["host_wait_share"] == verdict.evidence["data_wait_share"]


def test_the_host_parts_add_up_without_a_one_off_stall_too() -> None:
    steps = [
        replace(s, loop_pre_ms=2.0, loop_post_ms=1.0, sync_ms=3.0) for s in _steady_steps(200, {180: 170.0})
    ]
    steps = [replace(s, wall_ms=s.wall_ms + 6.0) for s in steps]
    verdict = rank_verdict(steps, dataloader_workers=2)
    assert "one_off_stall_ms" in verdict.evidence
    total = sum(verdict.evidence[f"host_{part}_share"] for part in HOST_PARTS)
    assert total == pytest.approx(1.0, abs=1e-3)


def test_verdicts_are_immutable_values() -> None:
    verdict = judge(window_stats(idle_window(0.3)))  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        verdict.kind = "healthy"  # type: ignore[misc]
    assert verdict == judge(window_stats(idle_window(0.3)))  # type: ignore[arg-type]


def test_a_cpu_compute_bound_job_is_told_the_step_clock_cannot_see_the_loops_own_python() -> None:
    steps = [step_record(i, wall_ms=50.0, wait_ms=0.5) for i in range(5, 105)]
    stats = window_stats(steps[:50])
    verdict = judge(stats, dataloader_workers=2, context=Context(on_gpu=False))  # type: ignore[arg-type]
    assert verdict.kind == "compute-bound"
    assert "`xfertop attach PID`" in advice_text(verdict)
    on_a_gpu = judge(stats, dataloader_workers=2, context=Context(on_gpu=True))  # type: ignore[arg-type]
    assert "`xfertop attach PID`" not in advice_text(on_a_gpu)


def _steady_steps(count: int, stalls: dict[int, float], epoch_start: bool = False) -> list[StepRecord]:
    """Host-clock steps of 20 ms of model and 0.5 ms of wait; ``stalls``: step number -> its wait (ms)."""
    steps = []
    for i in range(count):
        wait = stalls.get(i, 0.5)
        steps.append(
            step_record(
                i,
                wait_ms=wait,
                model_ms=20.0,
                epoch_start=epoch_start and i in stalls,
                workers_started=epoch_start and i in stalls,
            )
        )
    return steps


def test_a_one_off_stall_is_left_out_of_the_verdict_and_said() -> None:
    # One next() of 170 ms among ~1000 ms of compute: 14% of the window, once in 200 steps.
    steps = _steady_steps(200, {180: 170.0})
    verdict = rank_verdict(steps, dataloader_workers=2)
    assert verdict.kind == "compute-bound", verdict.headline
    assert verdict.evidence["one_off_stall_ms"] == 170.0
    assert "One next() waited 170 ms" in advice_text(verdict) and "a one-off" in advice_text(verdict)


def test_a_one_off_stall_the_gpu_felt_is_left_out_of_its_idle_too() -> None:
    steps = [replace(s, gpu_gap_ms=s.data_wait_ms) for s in _steady_steps(200, {180: 170.0})]
    verdict = rank_verdict(steps, dataloader_workers=2)
    assert verdict.kind == "compute-bound", verdict.headline
    assert verdict.evidence["gpu_idle_in"]["wait"] < 0.05


def test_an_early_window_is_too_short_to_call_a_stall_a_one_off() -> None:
    """Scenario c recorded on a loaded box: steps 5-11 hold one ~1.2 s wait for the next burst of four
    batches (the other waits are in warm-up). Seven steps cannot tell a one-off from the pipeline's beat:
    the early verdict is input-bound (it read "compute-bound (early, 7 steps)" before)."""
    steps = load_window("confined_workers_bursty_cpu").ranks[0].steps[:12]
    verdict = rank_verdict(steps, dataloader_workers=4)
    assert verdict.kind == "input-bound" and "(early, 7 steps)" in verdict.headline, verdict.headline
    assert "one_off_stall_ms" not in verdict.evidence


def test_a_stall_that_recurs_in_the_history_is_the_pipelines_own() -> None:
    # The same 170 ms wait every 40 steps (a shard boundary): still one per window, but not a one-off.
    steps = _steady_steps(200, {i: 170.0 for i in range(20, 200, 40)})
    verdict = rank_verdict(steps, dataloader_workers=2)
    assert verdict.kind == "input-bound", verdict.headline
    assert "one_off_stall_ms" not in verdict.evidence


def test_an_iterations_start_is_never_a_one_off_stall() -> None:
    # Non-persistent workers starting once in the window (a long epoch): the persistent_workers case.
    steps = _steady_steps(200, {180: 170.0}, epoch_start=True)
    verdict = rank_verdict(steps, dataloader_workers=2)
    assert verdict.kind == "input-bound", verdict.headline
    assert "persistent_workers=True" in advice_text(verdict)


def test_checkpoint_steps_that_take_a_large_share_are_named() -> None:
    # Every 10th step also ran torch.save, 60 ms beyond its 20 ms: 23% of the window.
    steps = [
        step_record(i, wall_ms=80.0 if i % 10 == 0 else 20.0, wait_ms=0.2, checkpoint=i % 10 == 0)
        for i in range(5, 105)
    ]
    verdict = rank_verdict(steps, dataloader_workers=2)
    assert verdict.kind == "compute-bound"
    assert verdict.advice[0].startswith("torch.save ran in 5 steps of the window, which took 23% of its time")
    rare = [replace(s, wall_ms=22.0) if s.checkpoint else s for s in steps]  # cheap saves: nothing said
    assert "torch.save" not in advice_text(rank_verdict(rare, dataloader_workers=2))


def test_a_loop_whose_own_work_is_mostly_checkpoints_names_them_first() -> None:
    # `xfertop run` partitions the step: torch.save after the optimizer step is the loop's own work after
    # the step. Every 10th step saved for 60 ms beyond a 6 ms step of 1 ms of Python bookkeeping.
    def steps(save_ms: float, post_ms: float) -> list:
        return [
            step_record(
                i,
                model_ms=4.8,
                wait_ms=0.2,
                loop_post_ms=post_ms + (save_ms if i % 10 == 0 else 0.0),
                checkpoint=i % 10 == 0,
            )
            for i in range(5, 105)
        ]

    verdict = rank_verdict(steps(60.0, 1.0), dataloader_workers=2)
    assert verdict.kind == "loop-bound", verdict.headline
    assert "(saving checkpoints: 50% of the time)" in verdict.headline, verdict.headline
    assert verdict.advice[0].startswith("torch.save ran in 5 steps of the window"), verdict.advice
    assert "logging, metrics, bookkeeping" not in advice_text(verdict)  # 1 ms of 12 a step: not named
    # With the loop's bookkeeping large on its own too, its remedy follows the checkpoints'.
    both = rank_verdict(steps(60.0, 6.0), dataloader_workers=2)
    assert both.advice[0].startswith("torch.save ran in") and "logging, metrics" in both.advice[1]
    # Bookkeeping alone: no word of checkpoints.
    alone = rank_verdict(steps(0.0, 12.0), dataloader_workers=2)
    assert alone.kind == "loop-bound" and "checkpoint" not in alone.headline + advice_text(alone)
    # Session 28's j31 (SGD with momentum written by hand after backward(), 22% of each step) reads the
    # same: its advice names that update beside the bookkeeping.
    assert "updated by hand after backward()" in alone.advice[0] and "fused=True" in alone.advice[0]
    # A job whose torch.optim optimizer was seen stepping (even one step in eight: accumulation) updates
    # nothing by hand: the clause is not said (session 47's trial: EMA and progress-bar jobs read it).
    optimized = rank_verdict(
        [replace(s, optimizer_stepped=s.step % 8 == 0) for s in steps(0.0, 12.0)], dataloader_workers=2
    )
    assert optimized.kind == "loop-bound" and "logging, metrics, bookkeeping" in optimized.advice[0]
    assert "by hand" not in advice_text(optimized) and "fused=True" not in advice_text(optimized)


def test_a_loop_bound_headline_says_the_share_of_the_part_it_names() -> None:
    # Session 50's trial: a checkpointing job (2% of each step before the model, 24% after the step)
    # read "the loop's own work after the step ... it takes 26% of each step", both parts' sum under one
    # part's name, where its own summary said "loop after the step 24%".
    def steps(pre_ms: float) -> list:
        return [
            step_record(i, model_ms=76.0 - pre_ms, loop_pre_ms=pre_ms, loop_post_ms=24.0) for i in range(60)
        ]

    small = rank_verdict(steps(2.0))
    assert small.kind == "loop-bound", small.headline
    assert small.headline.startswith(
        "loop-bound: the loop's own work after the step holds the step; it takes 24%"
    )
    both = rank_verdict(steps(9.0))
    assert both.headline.startswith(
        "loop-bound: the loop's own work after the step (24%) and before the model (9%) holds the step; it "
        "takes 33% of each step"
    ), both.headline


def test_a_second_cause_over_its_own_bar_is_named_after_the_first() -> None:
    # Session 50's trial: numpy metrics after the step (31% of each step) with a 0-worker loader waiting
    # 18%: loop-bound, right, and the wait, over the input's own bar, went unsaid.
    steps = [step_record(i, model_ms=51.0, wait_ms=18.0, loop_post_ms=31.0) for i in range(60)]
    verdict = rank_verdict(steps, dataloader_workers=0)
    assert verdict.kind == "loop-bound", verdict.headline
    assert verdict.advice[-1] == (
        "Next: the wait for data (num_workers=0) takes 18% of each step, over that bar too."
    )
    # Under its bar (8%), nothing more is said; nor is the headline's own cause said twice.
    under = rank_verdict([step_record(i, model_ms=61.0, wait_ms=8.0, loop_post_ms=31.0) for i in range(60)])
    assert not any(line.startswith("Next:") for line in under.advice), under.advice
    flipped = rank_verdict(
        [step_record(i, model_ms=51.0, wait_ms=31.0, loop_post_ms=18.0) for i in range(60)]
    )
    assert flipped.kind == "input-bound" and flipped.advice[-1].startswith(
        "Next: the loop's own work (before the model 0%, after the step 18%) takes 18% of each step"
    ), flipped.advice


def test_a_two_rank_stragglers_headline_compares_it_with_the_other_rank_not_with_itself() -> None:
    fixture = load_window("straggler_ddp4")
    straggler = next(r for r in fixture.ranks if r.rank == 2)
    victim = next(r for r in fixture.ranks if r.rank == 0)
    verdict = job_verdict([victim, straggler])
    assert verdict.kind == "straggler", verdict.headline
    assert verdict.evidence["median_input_share"] == pytest.approx(
        window_or_early(victim.steps).input_share, abs=1e-4
    )
    assert "the others' median" in verdict.headline


def _percents(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"(?<![<\d])(\d+)%", text)]


def test_a_healthy_headline_shows_the_hosts_parts_adding_up_and_the_gpus_busy_apart() -> None:
    """fp16 with a GradScaler on the H100 (docs/measurements/h100-2026-12-05-s32): the scaler's .item()
    waits for the backward inside every optimizer step, 45% of the host's step. The headline read "data
    2%, loop 3%, copy 3%, model 39% of each step, the GPU is busy 81%": GPU idle shares beside a host
    share, the sync unnamed, 47% in all. Now the host's parts on the host's clock, adding up to 100, and
    the GPU's busy share labelled apart."""
    steps = [
        step_record(
            i,
            wait_ms=9.5,
            loop_pre_ms=1.0,
            copy_ms=2.0,
            model_ms=42.5,
            sync_ms=44.0,
            loop_post_ms=1.0,
            gap_ms=0.0,
            h2d_bytes=4 << 20,
            pinned=True,
            partitioned=True,
        )
        for i in range(5, 45)
    ]
    verdict = rank_verdict(steps, gpu_busy_share=0.81)
    assert (verdict.kind, verdict.rule) == ("healthy", "healthy"), verdict.headline
    gpu, _, host = verdict.headline.partition("; the host's step: ")
    assert gpu == "healthy: the GPU is busy 81% of each step", verdict.headline
    assert "sync 44%" in host and sum(_percents(host)) == 100, verdict.headline
    on_cpu = window_stats([replace(s, gpu_gap_ms=None, h2d_bytes=0) for s in steps])
    assert on_cpu is not None
    cpu = judge(on_cpu, context=Context(on_gpu=False))
    assert cpu.headline.startswith("healthy: data 10%, loop 2%,"), cpu.headline
    assert sum(_percents(cpu.headline)) == 100, cpu.headline


def _epochs_of_32(*, workers_started: bool) -> list[StepRecord]:
    """Epochs of 32 steps whose first step waits 40 ms for its first batch, the others 0.2 ms (a 6 ms
    model step; the GPU drained during each wait)."""
    steps = []
    for i in range(5, 105):
        first = i % 32 == 0
        wait = 40.0 if first else 0.2
        steps.append(
            step_record(
                i,
                wait_ms=wait,
                copy_ms=0.3,
                model_ms=6.0,
                gap_ms=wait,
                h2d_bytes=6 << 20,
                pinned=True,
                partitioned=True,
                epoch_start=first,
                workers_started=first and workers_started,
            )
        )
    return steps


def test_epoch_start_spikes_with_persistent_workers_do_not_ask_for_persistent_workers() -> None:
    """fp16 + GradScaler on the H100 (docs/measurements/h100-2026-12-05-s32): 4 persistent workers,
    epochs of 32 steps, each epoch's first batch waited; the advice read "if they fall at epoch starts,
    set persistent_workers=True". No step of the window started workers: they persist, and what waits is
    the epoch's first batch, which PyTorch asks for only when the epoch begins."""
    verdict = rank_verdict(_epochs_of_32(workers_started=False), dataloader_workers=4, gpu_busy_share=0.8)
    advice = advice_text(verdict)
    assert verdict.kind == "input-bound", verdict.headline
    assert "set persistent_workers=True" not in advice, advice
    assert "though the workers persist" in advice and "epochs of about 32 steps" in advice, advice
    assert "Raise num_workers" not in advice, advice
    restarted = rank_verdict(_epochs_of_32(workers_started=True), dataloader_workers=4, gpu_busy_share=0.8)
    assert "persistent_workers=True" in advice_text(restarted), advice_text(restarted)


def test_a_validation_loaders_restarts_beside_persistent_epochs_do_not_turn_the_advice() -> None:
    """The training loader's workers persist and its epoch starts hold the long waits; a small validation
    pass starting its workers every 25 steps waits a little: the long waits are the kept workers'."""
    steps = [
        replace(s, epoch_start=True, workers_started=True, data_wait_ms=5.0, wall_ms=s.wall_ms + 4.8)
        if s.step % 25 == 0 and not s.epoch_start
        else s
        for s in _epochs_of_32(workers_started=False)
    ]
    advice = advice_text(rank_verdict(steps, dataloader_workers=4, gpu_busy_share=0.8))
    assert "though the workers persist" in advice and "set persistent_workers=True" not in advice, advice


def test_spikes_away_from_epoch_starts_ask_for_a_deeper_prefetch_not_persistent_workers() -> None:
    """The same long waits on steps that begin no epoch (every 32nd batch is slow to read)."""
    steps = [
        replace(s, epoch_start=False, workers_started=False) for s in _epochs_of_32(workers_started=False)
    ]
    advice = advice_text(rank_verdict(steps, dataloader_workers=4, gpu_busy_share=0.8))
    assert "not at the starts of epochs" in advice and "prefetch_factor" in advice, advice
    assert "persistent_workers" not in advice, advice


def test_a_cpu_jobs_num_workers_advice_counts_no_gpus() -> None:
    """A new user's trial on a box without a GPU read "Set num_workers to 2-4 per GPU"."""
    steps = [step_record(i, wait_ms=30.0, model_ms=10.0, partitioned=True) for i in range(5, 45)]
    stats = window_stats(steps)
    assert stats is not None
    on_cpu = advice_text(judge(stats, dataloader_workers=0, context=Context(on_gpu=False)))
    assert "Set num_workers to 2-4 and raise it" in on_cpu, on_cpu
    on_gpu = advice_text(judge(stats, dataloader_workers=0, context=Context()))
    assert "Set num_workers to 2-4 per GPU" in on_gpu, on_gpu
    # Session 50's trial: a text job tokenising in its collate_fn on a 2-core box ran no faster with 1 or
    # 2 workers: they share the cores with the model's threads. On a few cores the advice splits them.
    two = advice_text(judge(stats, dataloader_workers=0, context=Context(on_gpu=False, cores_allowed=2)))
    assert "Set num_workers to 2-4" not in two, two
    assert "share this process's 2 cores with the model's threads: try num_workers=1 with " in two, two
    assert "torch.set_num_threads(2 - num_workers)" in two, two
    four = advice_text(judge(stats, dataloader_workers=0, context=Context(on_gpu=False, cores_allowed=4)))
    assert "try num_workers=1-3 with torch.set_num_threads(4 - num_workers)" in four, four
    one = advice_text(judge(stats, dataloader_workers=0, context=Context(on_gpu=False, cores_allowed=1)))
    assert "1 core only" in one and "num_workers=1" not in one, one
    many = advice_text(judge(stats, dataloader_workers=0, context=Context(on_gpu=False, cores_allowed=16)))
    assert "Set num_workers to 2-4 and raise it" in many, many
