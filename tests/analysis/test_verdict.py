"""Verdicts on recorded windows of each kind, the rules at their thresholds, and the JSON shape."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from window_fixtures import WindowFixture, load_window, rank_state, window_names

from xfertop.analysis.evidence import Context
from xfertop.analysis.steps import window_stats
from xfertop.analysis.thresholds import INPUT_CRITICAL_SHARE, INPUT_WARN_SHARE
from xfertop.analysis.verdict import Verdict, job_verdict, judge, rank_verdict
from xfertop.model.jobs import StepRecord


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


@pytest.mark.parametrize("name", window_names())
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


def test_a_window_of_every_kind_is_on_file() -> None:
    kinds = {load_window(name).expected_kind for name in window_names()}
    assert kinds >= {
        "input-bound",
        "copy-bound",
        "compute-bound",
        "host-bound",
        "straggler",
        "healthy",
        "warming-up",
    }


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
    steps = [
        StepRecord(
            i,
            60.0,
            40.0 if i % 10 == 0 else 3.0,
            0.0,
            0.1,
            40.0,
            (40.0 if i % 10 == 0 else 3.0) + 2.0,
            1 << 20,
            32,
            True,
            False,
        )
        for i in range(5, 105)
    ]
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
        steps.append(StepRecord(i, wait + 5.0, wait, 0.0, None, None, None, 0, 32, False, False))
    verdict = rank_verdict(steps, dataloader_workers=2)
    assert verdict.kind == "input-bound"
    assert "prefetch_factor" not in advice_text(verdict)


def test_pageable_input_bound_gpu_job_is_told_to_pin_and_copy_non_blocking() -> None:
    steps = [StepRecord(i, 100.0, 30.0, 2.0, 1.0, 69.0, 30.0, 1 << 24, 64, False, True) for i in range(40)]
    verdict = rank_verdict(steps, dataloader_workers=0)
    assert verdict.kind == "input-bound"
    assert "pin_memory=True" in advice_text(verdict) and "non_blocking=True" in advice_text(verdict)


# -- the rule of the house ------------------------------------------------------------------------------
def test_a_large_cpu_wait_with_no_gpu_idle_gap_is_not_starvation_and_says_so() -> None:
    verdict = verdict_of(load_window("compute_bound_hidden_wait"))
    assert verdict.kind == "compute-bound"
    assert verdict.evidence["data_wait_share"] > 0.25
    assert verdict.evidence["gpu_idle_share"] < 0.01
    assert verdict.evidence["hidden_wait"] is True
    assert "not starving" in verdict.headline
    assert "did not starve" in advice_text(verdict)


def test_compute_bound_says_the_pipeline_is_fine_and_not_to_tune_pcie() -> None:
    verdict = verdict_of(load_window("recorded_cpu_compute_bound"))
    assert verdict.kind == "compute-bound"
    assert "input pipeline keeps up" in advice_text(verdict)
    assert "Do not tune PCIe" in advice_text(verdict)
    assert "not starving" not in verdict.headline  # on the CPU clock no wait can be hidden


# -- copy-bound -----------------------------------------------------------------------------------------
def test_pageable_non_blocking_copies_are_named_with_the_fix() -> None:
    verdict = verdict_of(load_window("copy_bound_pageable"))
    assert "non_blocking from pageable memory" in verdict.headline
    assert "pin_memory=True" in advice_text(verdict)
    assert verdict.evidence["pageable_non_blocking_step_fraction"] == 1.0
    assert verdict.evidence["pinned_step_fraction"] == 0.0


def test_pinned_copy_bound_job_is_told_to_overlap_and_move_fewer_bytes() -> None:
    fixture = load_window("copy_bound_pageable")
    pinned = [replace(s, pinned=True, pageable_non_blocking=False) for s in fixture.ranks[0].steps]
    verdict = rank_verdict(pinned)
    assert verdict.kind == "copy-bound" and "pageable" not in verdict.headline
    assert "already pinned" in advice_text(verdict) and "fewer bytes" in advice_text(verdict)


# -- sync-bound -----------------------------------------------------------------------------------------
def test_sync_bound_needs_a_busy_share_the_step_clock_cannot_see() -> None:
    """The three CUDA events tile the step, so host stalls inside it look like compute; only an
    outside busy measure (NVML utilisation) reveals them."""
    fixture = load_window("sync_bound")
    steps = fixture.ranks[0].steps
    assert rank_verdict(steps, gpu_busy_share=0.45).kind == "host-bound"
    assert "item()" in advice_text(rank_verdict(steps, gpu_busy_share=0.45))
    assert rank_verdict(steps, gpu_busy_share=0.65).severity == "warn"
    assert rank_verdict(steps).kind == "compute-bound"


def test_a_job_is_sync_bound_when_its_ranks_gpus_are_busy_only_half_the_time() -> None:
    rank = load_window("sync_bound").ranks[0]
    ranks = [replace(rank, rank=r, pid=rank.pid + r) for r in range(2)]
    assert job_verdict(ranks).kind == "compute-bound"
    verdict = job_verdict(ranks, gpu_busy_share_by_pid={rank.pid: 0.45, rank.pid + 1: 0.5})
    assert verdict.kind == "host-bound" and verdict.evidence["gpu_busy_share"] == 0.475


def test_a_gpu_timeline_that_does_not_cover_the_step_is_sync_bound() -> None:
    steps = [StepRecord(i, 100.0, 1.0, 0.1, 0.5, 40.0, 1.0, 1 << 20, 32, True, False) for i in range(40)]
    verdict = rank_verdict(steps)
    assert verdict.kind == "host-bound" and verdict.severity == "critical"


# -- thresholds -----------------------------------------------------------------------------------------
def idle_window(idle_share: float) -> list[StepRecord]:
    idle_ms = 100.0 * idle_share
    return [
        StepRecord(i, 100.0, idle_ms, 0.0, 0.0, 100.0 - idle_ms, idle_ms, 0, 32, False, False)
        for i in range(40)
    ]


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
    early = rank_verdict(steps[:9])  # 9 steps (of a run long past warm-up): fewer than a full window's 20
    assert early.kind == "compute-bound" and early.evidence["early"] is True
    assert early.headline.startswith("compute-bound (early, 9 steps): ")
    full = rank_verdict(steps)
    assert full.evidence["early"] is False and "early" not in full.headline


# -- jobs -----------------------------------------------------------------------------------------------
def test_a_straggler_is_named_with_its_rank() -> None:
    verdict = verdict_of(load_window("straggler_ddp4"))
    assert verdict.kind == "straggler"
    assert "rank 2" in verdict.headline
    assert verdict.evidence["straggler_rank"] == 2
    assert verdict.evidence["victim_compute_excess_share"] > 0.2
    assert "rank 2" in advice_text(verdict)


def test_one_slow_rank_that_nobody_waits_for_is_not_a_straggler_nor_a_job_wide_bottleneck() -> None:
    """Independent ranks (no collectives): the others' compute is not inflated, so the median rank
    speaks for the job."""
    starved = load_window("input_bound_gpu").ranks[0]
    fed_steps = tuple(
        replace(s, gpu_idle_ms=0.2, data_wait_ms=0.4, wall_ms=s.wall_ms - s.gpu_idle_ms + 0.2)
        for s in starved.steps
    )
    ranks = [replace(starved, rank=r, steps=fed_steps) for r in (0, 1, 3)] + [replace(starved, rank=2)]
    verdict = job_verdict(ranks)
    assert verdict.kind == "compute-bound"
    assert verdict.evidence["ranks"] == 4


def test_a_single_rank_job_gets_the_rank_verdict() -> None:
    rank = load_window("input_bound_gpu").ranks[0]
    assert job_verdict([rank]).kind == rank_verdict(rank.steps).kind == "input-bound"


def test_a_job_of_ranks_still_warming_up_is_warming_up() -> None:
    rank = rank_state(0, [], None)
    assert job_verdict([rank, replace(rank, rank=1)]).kind == "warming-up"


# -- JSON -----------------------------------------------------------------------------------------------
def test_to_dict_is_the_documented_json_shape() -> None:
    verdict = verdict_of(load_window("copy_bound_pageable"))
    as_json = json.loads(json.dumps(verdict.to_dict()))
    assert set(as_json) == {"kind", "severity", "headline", "evidence", "advice"}
    assert as_json["kind"] == "copy-bound" and as_json["severity"] == "critical"
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
    ):
        assert key in as_json["evidence"], key


def test_verdicts_are_immutable_values() -> None:
    verdict = judge(window_stats(idle_window(0.3)))  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        verdict.kind = "healthy"  # type: ignore[misc]
    assert verdict == judge(window_stats(idle_window(0.3)))  # type: ignore[arg-type]


def test_a_cpu_compute_bound_job_is_told_the_step_clock_cannot_see_the_loops_own_python() -> None:
    steps = [StepRecord(i, 50.0, 0.5, 0.0, None, None, None, 0, 32, False, False) for i in range(5, 105)]
    stats = window_stats(steps[:50])
    verdict = judge(stats, dataloader_workers=2, context=Context(on_gpu=False))
    assert verdict.kind == "compute-bound"
    assert "`xfertop attach PID`" in advice_text(verdict)
    on_a_gpu = judge(stats, dataloader_workers=2, context=Context(on_gpu=True))
    assert "`xfertop attach PID`" not in advice_text(on_a_gpu)


def _steady_steps(count: int, stalls: dict[int, float], epoch_start: bool = False) -> list[StepRecord]:
    """CPU-clock steps of 20 ms compute and 0.5 ms of wait; ``stalls``: step number -> its wait (ms)."""
    steps = []
    for i in range(count):
        wait = stalls.get(i, 0.5)
        steps.append(
            StepRecord(
                i,
                20.0 + wait,
                wait,
                0.0,
                None,
                None,
                None,
                0,
                32,
                False,
                False,
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
        StepRecord(
            i,
            80.0 if i % 10 == 0 else 20.0,
            0.2,
            0.0,
            None,
            None,
            None,
            0,
            32,
            False,
            False,
            checkpoint=i % 10 == 0,
        )
        for i in range(5, 105)
    ]
    verdict = rank_verdict(steps, dataloader_workers=2)
    assert verdict.kind == "compute-bound"
    assert verdict.advice[0].startswith("torch.save ran in 5 steps of the window, which took 23% of its time")
    rare = [replace(s, wall_ms=22.0) if s.checkpoint else s for s in steps]  # cheap saves: nothing said
    assert "torch.save" not in advice_text(rank_verdict(rare, dataloader_workers=2))
