"""Sweep plans, sizes, case selection and the sample arithmetic, without running anything."""

from __future__ import annotations

import pytest

from xfertop.bench.cases import CASE_NAMES, CHECK_CASES, resolve_cases
from xfertop.bench.cases.copies import sync_baseline_bytes
from xfertop.bench.cases.dataloader import pinned_cost_bytes, worker_plan
from xfertop.bench.cases.system import parse_cpulist
from xfertop.bench.method import copies_per_sample, gb_per_s, summarise
from xfertop.bench.sizes import GIB, KIB, MIB, format_size, parse_size, sweep_plan


def test_default_sweep_is_64_kib_to_1_gib_by_4() -> None:
    assert [format_size(s) for s in sweep_plan()] == [
        "64 KiB",
        "256 KiB",
        "1 MiB",
        "4 MiB",
        "16 MiB",
        "64 MiB",
        "256 MiB",
        "1 GiB",
    ]


def test_sweep_drops_sizes_that_do_not_fit_and_keeps_odd_maxima() -> None:
    assert sweep_plan(fit_bytes=100 * MIB)[-1] == 64 * MIB
    assert sweep_plan(64 * KIB, 3 * MIB) == (64 * KIB, 256 * KIB, MIB, 3 * MIB)
    with pytest.raises(ValueError):
        sweep_plan(MIB, KIB)


@pytest.mark.parametrize(
    ("text", "size"), [("64KiB", 65536), ("256 MiB", 256 * MIB), ("1g", GIB), ("1GB", 10**9), ("4096", 4096)]
)
def test_parse_size(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "1.5GiB", "12 parsecs", "0"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_size(text)


def test_cases_by_name_or_letter_in_run_order() -> None:
    assert resolve_cases(["f", "a", "bidir"], check=False) == ["sync_baseline", "bidir", "sweep"]
    assert resolve_cases([], check=False) == list(CASE_NAMES)
    assert resolve_cases(["f"], check=True) == list(CHECK_CASES)
    with pytest.raises(KeyError, match="unknown case 'zz'"):
        resolve_cases(["zz"], check=False)


def test_check_is_the_acceptance_subset() -> None:
    assert set(CHECK_CASES) >= {"pinned_nb", "d2h", "sync_baseline", "bidir", "all_gpus", "numa"}
    assert "sweep" not in CHECK_CASES and "dataloader" not in CHECK_CASES


def test_worker_plan_doubles_up_to_the_cores() -> None:
    assert worker_plan(16) == [0, 2, 4, 8, 16]
    assert worker_plan(12) == [0, 2, 4, 8, 12]
    assert worker_plan(2) == [0, 2]
    assert worker_plan(1) == [0]


def test_pinned_cost_is_batch_times_prefetch_times_workers() -> None:
    assert pinned_cost_bytes(10 * MIB, 4, True) == 80 * MIB
    assert pinned_cost_bytes(10 * MIB, 0, True) == 20 * MIB
    assert pinned_cost_bytes(10 * MIB, 8, False) == 0


def test_sync_baseline_is_the_classic_1_gib_unless_memory_is_short() -> None:
    assert sync_baseline_bytes(140 * GIB) == GIB
    assert sync_baseline_bytes(1 * GIB) == 256 * MIB
    assert sync_baseline_bytes(0) == MIB


def test_copies_per_sample_moves_about_2_gib_within_bounds() -> None:
    assert copies_per_sample(256 * MIB) == 8
    assert copies_per_sample(64 * KIB) == 200
    assert copies_per_sample(4 * GIB) == 4


def test_bandwidth_uses_decimal_gigabytes() -> None:
    assert gb_per_s(10**9, 2, 1.0) == 2.0
    summary = summarise([3.0, 1.0, 2.0], warmup=0.5)
    assert (summary.median, summary.low, summary.high, summary.warmup) == (2.0, 1.0, 3.0, 0.5)


def test_cpulist() -> None:
    assert parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_cpulist("") == []
