"""Thresholds and verdict math: the rules docs/acceptance.md promises, on H200-shaped figures."""

from __future__ import annotations

import dataclasses

import pytest

from xfertop.analysis.acceptance import (
    PCIE_WIDTHS,
    Thresholds,
    judge_bandwidth,
    judge_errors,
    judge_link,
    judge_locality,
    judge_run,
    ratio_status,
)
from xfertop.analysis.pcie_link import link_bytes_per_s
from xfertop.model.bench import CaseResult

from .builders import GEN5_X16, H200_MACHINE, MIB, h200_cases, make_run, row


@pytest.mark.parametrize(
    ("gen", "width", "gb_per_s"),
    [
        (3, 16, 15.754),
        (4, 16, 31.508),
        (5, 16, 63.015),
        (6, 16, 121.0),
        (4, 8, 15.754),
        (5, 1, 3.938),
        (1, 1, 0.25),
    ],
)
def test_link_table_per_direction(gen: int, width: int, gb_per_s: float) -> None:
    assert link_bytes_per_s(gen, width) / 1e9 == pytest.approx(gb_per_s, abs=1e-3)


def test_link_table_scales_linearly_with_width_for_every_generation() -> None:
    for gen in (3, 4, 5, 6):
        x1 = link_bytes_per_s(gen, 1)
        assert [link_bytes_per_s(gen, w) for w in PCIE_WIDTHS] == pytest.approx([x1 * w for w in PCIE_WIDTHS])


def test_an_unknown_link_is_not_judged() -> None:
    gen7 = dataclasses.replace(GEN5_X16, gen_current=7)
    assert [v.status for v in judge_bandwidth(h200_cases(), gen7, Thresholds())] == ["skip"]


def test_ratio_boundaries_pass_at_082_warn_from_075() -> None:
    t = Thresholds()
    assert [ratio_status(r, t) for r in (0.90, 0.82, 0.8199, 0.75, 0.7499, 0.1)] == [
        "pass",
        "pass",
        "warn",
        "warn",
        "fail",
        "fail",
    ]


def test_thresholds_must_be_ordered() -> None:
    with pytest.raises(ValueError, match="warn ratio"):
        Thresholds(pass_ratio=0.7, warn_ratio=0.8)


@pytest.mark.parametrize(("h2d", "expected"), [(55.0, "pass"), (49.0, "warn"), (40.0, "fail")])
def test_pinned_h2d_on_gen5_judged_against_63_gb_per_s(h2d: float, expected: str) -> None:
    verdicts = judge_bandwidth(h200_cases(h2d=h2d), GEN5_X16, Thresholds())
    h2d_verdict = next(v for v in verdicts if "H2D" in v.check)
    assert h2d_verdict.status == expected
    assert h2d_verdict.measured == pytest.approx(h2d / 63.015, abs=1e-3)
    assert "Gen5 x16 63.0 GB/s" in h2d_verdict.message


def test_only_pinned_copies_of_at_least_64_mib_are_judged() -> None:
    checks = [v.check for v in judge_bandwidth(h200_cases(), GEN5_X16, Thresholds())]
    assert checks == ["pinned H2D 256 MiB", "pinned D2H 256 MiB"]
    small = [CaseResult("pinned_nb", "p", (row("p", "h2d", "pinned", 30.0, 16 * MIB),), 0.1)]
    assert [v.status for v in judge_bandwidth(small, GEN5_X16, Thresholds())] == ["skip"]


def test_thresholds_override_changes_the_verdict() -> None:
    strict = Thresholds(pass_ratio=0.9, warn_ratio=0.85)
    assert {v.status for v in judge_bandwidth(h200_cases(), GEN5_X16, strict)} == {"warn"}


def test_a_link_trained_below_its_max_fails_under_load() -> None:
    gen4 = dataclasses.replace(GEN5_X16, gen_current=4)
    assert [v.status for v in judge_link(gen4, Thresholds())] == ["fail", "pass"]
    narrow = dataclasses.replace(GEN5_X16, width_current=8)
    assert [v.status for v in judge_link(narrow, Thresholds())] == ["pass", "fail"]


def test_a_slot_that_caps_the_gpu_warns_and_an_expected_gen_decides() -> None:
    capped = dataclasses.replace(GEN5_X16, gen_current=4, gen_max=4, gen_gpu_max=5)
    assert judge_link(capped, Thresholds())[0].status == "warn"
    assert judge_link(capped, Thresholds(expect_gen=5))[0].status == "fail"
    assert judge_link(capped, Thresholds(expect_gen=4))[0].status == "pass"


def test_an_idle_link_is_not_judged() -> None:
    idle = dataclasses.replace(GEN5_X16, gen_current=1, pstate="P8")
    assert [v.status for v in judge_link(idle, Thresholds())] == ["info"]


def test_error_counter_deltas_against_dcgm_limits() -> None:
    t = Thresholds()
    assert [v.status for v in judge_errors(dataclasses.replace(GEN5_X16, replay_delta=80), t)] == [
        "pass",
        "pass",
    ]
    assert [v.status for v in judge_errors(dataclasses.replace(GEN5_X16, replay_delta=81), t)] == [
        "fail",
        "pass",
    ]
    assert [v.status for v in judge_errors(dataclasses.replace(GEN5_X16, correctable_delta=1), t)][
        1
    ] == "fail"
    unknown = dataclasses.replace(GEN5_X16, replay_delta=None, correctable_delta=None)
    assert [v.status for v in judge_errors(unknown, t)] == ["skip", "skip"]


def test_h200_figures_pass_and_exit_0() -> None:
    run = make_run()
    assert run.overall == "pass" and run.exit_code == 0


def test_a_corrupted_copy_fails_the_run() -> None:
    run = make_run(h200_cases(verified=False))
    assert run.overall == "fail" and run.exit_code == 1
    assert any(v.check == "copied data" and "pinned_nb" in v.message for v in run.verdicts)


def test_a_warning_still_exits_0() -> None:
    run = make_run(h200_cases(h2d=49.0))
    assert (run.overall, run.exit_code) == ("warn", 0)


def test_pageable_bidir_are_reported_not_judged() -> None:
    verdicts = judge_run(h200_cases(), [GEN5_X16], H200_MACHINE, Thresholds())
    info = {v.check: v for v in verdicts if v.status == "info"}
    assert "13% of pinned" in info["pageable H2D"].message
    assert "1.25x one direction" in info["bidirectional total"].message


def test_a_gpu_far_below_its_peers_warns() -> None:
    rows = tuple(
        row(f"GPU {i} H2D", "h2d", "pinned", v, gpu_index=i) for i, v in enumerate((44.0, 45.0, 30.0))
    )
    run = make_run([*h200_cases(), CaseResult("all_gpus", "all", rows, 1.0)])
    peer = {v.check: v.status for v in run.verdicts if "all GPUs busy" in v.check}
    assert peer == {
        "GPU 0 H2D with all GPUs busy": "info",
        "GPU 1 H2D with all GPUs busy": "info",
        "GPU 2 H2D with all GPUs busy": "warn",
    }


def test_locality_warns_when_the_process_cannot_run_near_the_gpu() -> None:
    remote = dataclasses.replace(H200_MACHINE, process_cpus=(0, 1), gpu_local_cpus=(8, 9), gpu_numa_node=1)
    assert judge_locality(remote)[0].status == "warn"
    assert judge_locality(H200_MACHINE)[0].status == "pass"


def test_a_gpu_shared_with_a_job_warns_that_figures_may_read_low() -> None:
    busy = dataclasses.replace(H200_MACHINE, gpu_busy_pids=(4242,))
    run = make_run(machine=busy)
    assert (run.overall, run.exit_code) == ("warn", 0)
    assert any(v.check == "GPU free during the run" and "pid 4242" in v.message for v in run.verdicts)
