"""The pure parts under the panes: charts, refresh steps, layout rule, process join, rank flags, labels."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ui.sample_states import TRAIN_PID, gpu, gpu_state, host_state, jobs_state, rank
from xfertop.analysis.steps import window_stats
from xfertop.ui import chart, link_text
from xfertop.ui.format import human_bytes
from xfertop.ui.gpu_area import rows_per_gpu
from xfertop.ui.process_table import COLUMNS, process_rows
from xfertop.ui.rank_row import rank_flags
from xfertop.ui.step_strip import strip_title
from xfertop.ui.view_state import REFRESH_STEPS_S, ViewState


def test_spark_is_scaled_to_the_given_maximum_not_to_its_own_peak() -> None:
    # 6.3 GB/s on a 63 GB/s link is a tenth of the link: a low bar, even though it is the peak.
    assert chart.spark([6.3e9], 63e9, 1) == "▁"
    assert chart.spark([63e9, 31.5e9, 0.0], 63e9, 3) == "█▄ "
    assert chart.spark([1.0], 100.0, 4) == "   ▁", "newest on the right, padded on the left"


def test_area_stacks_rows_top_first() -> None:
    assert chart.area([100.0, 50.0, 0.0], 100.0, 3, 2) == ["█  ", "██ "]


def test_stacked_bar_fits_overlapping_shares_and_draws_each_part_in_its_letter() -> None:
    pieces = chart.stacked([(0.8, "I", "red"), (0.4, "X", "green")], 12)
    assert "".join(text for text, _ in pieces) == "IIIIIIIIXXXX"
    assert [style for _, style in pieces] == ["red", "green"]
    assert "".join(text for text, _ in chart.stacked([(0.25, "I", "red")], 8)) == "II······"


def test_parts_that_make_up_the_whole_fill_the_bar() -> None:
    """15.6 cells of model and 0.4 of loop rounded one by one left a "·" no legend explains; by largest
    remainder the bar is full, and each part keeps the cells its share rounds to."""
    bar = "".join(text for text, _ in chart.stacked([(0.025, "L", "red"), (0.975, "M", "green")], 16))
    assert bar == "M" * 16
    thirds = "".join(
        text for text, _ in chart.stacked([(1 / 3, "W", "r"), (1 / 3, "L", "m"), (1 / 3, "M", "g")], 16)
    )
    assert len(thirds) == 16 and "·" not in thirds and thirds.count("W") in (5, 6), thirds


def test_refresh_steps_stop_at_both_ends() -> None:
    view = ViewState(interval_s=1.0)
    assert view.faster() == 0.5
    for _ in range(5):
        view.faster()
    assert view.interval_s == REFRESH_STEPS_S[0]
    for _ in range(10):
        view.slower()
    assert view.interval_s == REFRESH_STEPS_S[-1]


def test_the_gpus_share_the_rows_the_other_panes_leave() -> None:
    assert rows_per_gpu(8, 17) == 2
    assert rows_per_gpu(8, 7) == 1, "never less than one line each: the area scrolls"
    assert rows_per_gpu(1, 30) == 30, "one GPU takes them all, for taller charts"


def test_process_rows_join_gpu_host_and_job_figures() -> None:
    view = ViewState()
    view.apply_gpu(gpu_state(1))
    view.apply_host(host_state())
    view.apply_jobs(jobs_state())
    rows = dict(process_rows(view))
    cells = dict(zip(COLUMNS, rows[str(TRAIN_PID)], strict=True))
    assert cells["GPU"] == "0" and cells["USER"] == "alice" and cells["GPU MEM"] == "40.0G"
    assert cells["CPU%"] == "104" and cells["RSS"] == "6.0G"
    assert cells["WORKERS"] == "1" and cells["PINNED"] == "1.0G"


def test_flags_name_pageable_non_blocking_and_few_workers() -> None:
    starved = rank(workers=1)
    assert rank_flags(starved, window_stats(starved.steps)) == ["pageable non_blocking", "few workers"]
    fed = rank(workers=8)
    assert "few workers" not in rank_flags(fed, window_stats(fed.steps))
    # The ring's loader (its longest iteration) has none, the window's steps come from one with 2: the
    # demo's second phase read "no workers" beside a header saying num_workers=2.
    switched = replace(rank(workers=0), steps=tuple(replace(s, loader_workers=2) for s in rank().steps))
    assert not {"no workers", "few workers"} & set(rank_flags(switched, window_stats(switched.steps)))


def test_sampled_figures_are_marked_and_missing_ones_say_na() -> None:
    sampled = gpu(0, method="sampled")
    assert link_text.direction_label("RX", 54.9e9, sampled) == "RX 54.9 GB/s of 63.0 (Gen5 x16) sampled"
    nothing = replace(gpu(0), pcie=replace(gpu(0).pcie, method="none"))
    assert link_text.direction_label("TX", 5e9, nothing) == "TX n/a"


def test_idle_downclock_is_no_warning_but_a_slow_busy_link_is() -> None:
    assert link_text.link_warning(gpu(0, gen=3, rx=0.01e9, tx=0.0)) is None
    assert "Gen3 x16" in (link_text.link_warning(gpu(0, gen=3)) or "")


def test_human_bytes() -> None:
    assert human_bytes(None) == "n/a"
    assert human_bytes(512) == "512B"
    assert human_bytes(3 * 1024**3 + 1024**3 // 5) == "3.2G"


def test_short_forms_for_narrow_lines() -> None:
    sampled = "RX 54.9 GB/s of 63.0 (Gen5 x16) sampled"
    assert link_text.short_label(sampled) == "RX ~54.9 GB/s of 63.0 (Gen5 x16)"
    assert link_text.short_label("TX 5.0 GB/s of 63.0 (Gen5 x16)") == "TX 5.0 GB/s of 63.0 (Gen5 x16)"
    assert link_text.short_warning(gpu(0, gen=3)) == "link Gen3 x16, can do Gen5 x16"
    assert link_text.short_warning(gpu(0)) is None


def test_pinned_of_an_uninstrumented_process_is_an_upper_bound() -> None:
    view = ViewState()
    view.apply_gpu(gpu_state(1))
    host = host_state()
    trainer = replace(host.processes[0], shmem_rss_bytes=2 * 1024**3)
    view.apply_host(replace(host, processes=(trainer,)))
    cells = dict(zip(COLUMNS, dict(process_rows(view))[str(TRAIN_PID)], strict=True))
    assert cells["PINNED"] == "≤2.0G", "no reporter figure: shared memory bounds pinned memory from above"
    view.apply_jobs(jobs_state())
    cells = dict(zip(COLUMNS, dict(process_rows(view))[str(TRAIN_PID)], strict=True))
    assert cells["PINNED"] == "1.0G", "the reporter's figure wins"


def test_pinned_of_a_cuda_process_without_reporter_is_read_from_proc() -> None:
    view = ViewState()
    view.apply_gpu(gpu_state(1))
    host = host_state()
    trainer = replace(
        host.processes[0],
        shmem_rss_bytes=2 * 1024**3,
        cuda_host_alloc_bytes=1034 * 1024**2,
        cuda_host_alloc_age_s=3.0,
    )
    view.apply_host(replace(host, processes=(trainer,)))
    cells = dict(zip(COLUMNS, dict(process_rows(view))[str(TRAIN_PID)], strict=True))
    assert cells["PINNED"] == "1.0G proc", "cudaHostAlloc memory from smaps beats the shared-memory bound"
    view.apply_jobs(jobs_state())
    cells = dict(zip(COLUMNS, dict(process_rows(view))[str(TRAIN_PID)], strict=True))
    assert cells["PINNED"] == "1.0G", "the reporter's figure still wins"


@pytest.mark.parametrize("width", [200, 120, 100, 80, 60, 40])
def test_the_strips_title_keeps_its_whole_legend_at_any_width(width: int) -> None:
    """A new user's trial found the legend cut at every size ("W wait  L loop  C" at 120 columns) and the
    title without its closing parenthesis at 80: the title now takes the longest wording that fits."""
    title = strip_title("a_long_training_script_name.py rank 0/1", 2, width).plain
    assert len(title) <= width and title.endswith("W wait  L loop  C copy  M model  S sync"), title
    assert title.count("(") == title.count(")"), title
