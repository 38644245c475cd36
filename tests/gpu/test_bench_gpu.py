"""On a real GPU (H200): every case runs through the real child and gives plausible figures.

Run on the GPU machine: `pytest -m gpu tests/gpu/test_bench_gpu.py`. Set XFERTOP_RECORDS to keep the
records (JSON + Markdown) for docs/acceptance.md.
"""

from __future__ import annotations

import os
import time

import pytest

from xfertop.bench.client import BenchClient
from xfertop.bench.protocol import RunDone
from xfertop.model.bench import BenchRun, CaseResult

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def full_run() -> BenchRun:
    outcome = BenchClient(["--backend", "cuda", "--samples", "3"]).run_to_end()
    assert isinstance(outcome.final, RunDone), outcome.final
    _save(outcome.final.run)
    return outcome.final.run


def _save(run: BenchRun) -> None:
    if os.environ.get("XFERTOP_RECORDS"):
        from xfertop.bench.report import save_record

        save_record(run)


def _case(run: BenchRun, name: str) -> CaseResult:
    case = next(c for c in run.cases if c.case == name)
    assert case.error is None
    return case


def test_every_case_ran_or_said_why_not(full_run: BenchRun) -> None:
    assert [c.case for c in full_run.cases] == [
        "sync_baseline",
        "pinned",
        "pinned_nb",
        "d2h",
        "bidir",
        "sweep",
        "trap",
        "overlap",
        "dataloader",
        "model_step",
        "all_gpus",
        "numa",
    ]
    for case in full_run.cases:
        assert case.rows or case.skipped_reason, case.case
    assert all(r.verified is not False for c in full_run.cases for r in c.rows)


def test_pinned_beats_pageable_and_sits_near_the_link(full_run: BenchRun) -> None:
    link = full_run.links[0]
    assert link.gen_current and link.width_current
    from xfertop.analysis.pcie_link import link_bytes_per_s

    theory = link_bytes_per_s(link.gen_current, link.width_current) / 1e9
    pinned = _case(full_run, "pinned_nb").rows[0].value
    pageable = _case(full_run, "sync_baseline").rows[0].value
    assert 0.6 * theory < pinned <= theory
    assert pageable < pinned
    d2h = {r.memory: r.value for r in _case(full_run, "d2h").rows}
    assert 0.6 * theory < d2h["pinned"] <= theory and d2h["pageable"] < d2h["pinned"]
    bidir = _case(full_run, "bidir").rows[0].value
    assert pinned < bidir <= 2 * theory


def test_sweep_rises_with_size(full_run: BenchRun) -> None:
    pinned_h2d = [r for r in _case(full_run, "sweep").rows if r.memory == "pinned" and r.direction == "h2d"]
    assert len(pinned_h2d) >= 6
    assert pinned_h2d[0].value < pinned_h2d[-1].value


def test_the_non_blocking_trap_shows(full_run: BenchRun) -> None:
    rows = {r.memory: r for r in _case(full_run, "trap").rows}
    assert rows["pageable"].extra["host_share_of_transfer"] > 0.5
    assert rows["pinned"].extra["host_share_of_transfer"] < 0.2


def test_pinned_copies_overlap_compute(full_run: BenchRun) -> None:
    rows = {r.memory: r for r in _case(full_run, "overlap").rows}
    assert rows["pinned"].value > 0.5
    assert rows["pinned"].value >= rows["pageable"].value


def test_dataloader_and_model_step_give_figures(full_run: BenchRun) -> None:
    loader = _case(full_run, "dataloader").rows
    assert len(loader) >= 4 and all(r.value > 0 for r in loader)
    assert all(r.extra["pinned_cost_bytes"] > 0 for r in loader if r.memory == "pinned")
    step = {r.memory: r for r in _case(full_run, "model_step").rows}
    assert step["pinned"].value < step["pageable"].value
    assert 0 < step["pinned"].extra["copy_share"] < 1


def test_verification_catches_a_corrupted_copy() -> None:
    import torch

    from xfertop.bench.ops_cuda import CudaOps

    ops = CudaOps()
    host, device = ops.alloc(64 << 20, "pinned"), ops.alloc(64 << 20, "device")
    ops.fill_pattern(host, 5)
    ops.time_copies_s(device, host, 4, non_blocking=True, pre_block=False)
    assert ops.verify_pattern(device, 5)
    device[12345] ^= 1
    torch.cuda.synchronize()
    assert not ops.verify_pattern(device, 5)


def test_check_passes_within_60_s_on_an_h200() -> None:
    start_s = time.perf_counter()
    outcome = BenchClient(["--check"]).run_to_end()
    wall_s = time.perf_counter() - start_s
    assert isinstance(outcome.final, RunDone), outcome.final
    _save(outcome.final.run)
    assert wall_s <= 60, f"xfertop check took {wall_s:.1f} s"
    failed = [v for v in outcome.final.run.verdicts if v.status == "fail"]
    assert not failed, failed
