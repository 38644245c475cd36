"""The job first (issue 22): GPU charts stop at a height that shows shape and are scaled to what flows,
the jobs take the rest of the screen, the verdict's advice is wrapped, never cut, and each rank's recent
steps show where they went. Driven through the real app with fixed snapshots."""

from __future__ import annotations

import dataclasses
import itertools
import math
import time

import pytest

from ui.sample_states import (
    FROZEN_TIME,
    gpu_state,
    host_state,
    jobs_state,
    no_driver_state,
    rank,
    steps,
    with_step_history,
)
from ui.screen_text import blank_rows, screen_text
from xfertop.model.gpu import GpuState
from xfertop.model.jobs import JobsState
from xfertop.sources.bundle import Sources
from xfertop.ui.app import XfertopApp
from xfertop.ui.gpu_area import MAX_PANE_ROWS
from xfertop.ui.messages import GpuStateUpdated, HostStateUpdated, JobsStateUpdated

MAX_BLANK_ROWS = 4
HISTORY_POINTS = 120


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


def _app(note: str | None = None) -> XfertopApp:
    return XfertopApp(Sources(), start_sources=False, clock=lambda: FROZEN_TIME, note=lambda: note)


async def _feed(
    app: XfertopApp, pilot, gpus: GpuState, jobs: JobsState, *, rx: float = 27e9, step_history: bool = True
) -> None:
    """A minute or two of traffic history (a slow wave around ``rx``) and, with ``step_history``, three
    minutes of the ranks' steps, then the snapshots."""
    for i in range(HISTORY_POINTS if gpus.gpus else 0):
        wave = 1 + math.sin(i / 6)
        sample = gpu_state(len(gpus.gpus), rx=rx * wave, tx=rx / 10 * wave, util=40 * wave)
        app.view.apply_gpu(dataclasses.replace(sample, timestamp=FROZEN_TIME - HISTORY_POINTS + i))
    if step_history:
        app.view.apply_jobs(with_step_history(jobs))
    app.post_message(GpuStateUpdated(gpus))
    app.post_message(HostStateUpdated(host_state()))
    app.post_message(JobsStateUpdated(jobs))
    await pilot.pause()
    await pilot.pause()


def _words(rows: list[str]) -> str:
    return " ".join(" ".join(rows).split())


def _advice(app: XfertopApp) -> tuple[str, ...]:
    (job,) = app.analysis.jobs
    assert job.verdict.advice, "the sample job is starved: it has advice"
    return job.verdict.advice


@pytest.mark.parametrize("size", [(160, 48), (200, 50)])
async def test_one_gpu_and_one_job_give_the_job_the_room(size: tuple[int, int]) -> None:
    app = _app()
    async with app.run_test(size=size) as pilot:
        await _feed(app, pilot, gpu_state(1), jobs_state())
        rows = screen_text(app)
        assert app.query_one("#gpu-0").size.height <= MAX_PANE_ROWS, "\n".join(rows)
        assert app.jobs_pane.size.height >= size[1] // 2, "\n".join(rows)
        assert blank_rows(rows) <= MAX_BLANK_ROWS, "\n".join(rows)
        shown = _words(rows)
        for advice in _advice(app):
            assert " ".join(advice.split()) in shown, "\n".join(rows)
        assert not any(row.rstrip().endswith("…") and "→" in row for row in rows)


@pytest.mark.parametrize("size", [(160, 48), (200, 50)])
async def test_without_a_gpu_the_demo_job_fills_the_screen(size: tuple[int, int]) -> None:
    """`xfertop demo` on a box without a GPU: the demo's note in the header, no driver, its job."""
    app = _app(note="demo: phase 1 of 2, starved (num_workers=0)")
    async with app.run_test(size=size) as pilot:
        await _feed(app, pilot, no_driver_state(), jobs_state())
        rows = screen_text(app)
        assert blank_rows(rows) <= MAX_BLANK_ROWS, "\n".join(rows)
        assert any("where each step went" in row for row in rows), "\n".join(rows)
        # Said once, by the GPU area's line with the reason; the header said it too.
        assert sum("no NVIDIA driver" in row for row in rows) == 1, "\n".join(rows)


async def test_at_80x24_the_advice_wraps_instead_of_being_cut() -> None:
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        await _feed(app, pilot, gpu_state(1), jobs_state())
        rows = screen_text(app)
        assert any(row.startswith(" train.py: input-bound") for row in rows), "\n".join(rows)
        first = " ".join(_advice(app)[0].split())
        assert first in _words(rows), "\n".join(rows)
        assert app.query_one("#gpu-0").size.height <= 24 // 4, "\n".join(rows)


async def test_pcie_charts_are_scaled_to_what_flows_and_name_the_link() -> None:
    """A job moving 0.1-0.5 GB/s over a 63 GB/s link: its shape, not a flat line at the bottom."""
    app = _app()
    slow = gpu_state(1, rx=0.4e9, tx=0.04e9)
    async with app.run_test(size=(160, 48)) as pilot:
        await _feed(app, pilot, slow, jobs_state(), rx=0.25e9)
        rows = screen_text(app)
        title = next(row for row in rows if "RX 0.4 GB/s" in row)
        assert "RX 0.4 GB/s of 63.0 (Gen5 x16)" in title, "the link's capacity stays in the title"
        top = rows[rows.index(title) + 1]
        assert top.lstrip().startswith("500M┤"), "\n".join(rows)
        assert "63G" not in "\n".join(rows)
        assert "100%┤" in top, "utilisation and memory keep their 0-100% scales"


def _strip_rows(app: XfertopApp) -> list[str]:
    """The strip's bucket rows as text (its title left out)."""
    return [str(line) for line in app.jobs_pane.strip.lines[1:]]


def _bar(row: str) -> str:
    """A bucket row's bar: what follows its label (how long ago, steps)."""
    return row[13:]


async def test_the_step_strip_shows_starvation_that_comes_and_goes() -> None:
    """Three minutes of a rank starved for 30 s, then fed for 30 s, and so on: the strip's rows (a few
    seconds each, newest at the bottom) show the wait rise and fall, which a share over the window
    would average away."""
    app = _app()
    async with app.run_test(size=(200, 50)) as pilot:
        await _feed(app, pilot, gpu_state(1), jobs_state())
        rows = screen_text(app)
        assert any("where each step went: train.py rank 0/1, a row per 5 s" in row for row in rows)
        plot = _strip_rows(app)
        assert len(plot) >= 18, "\n".join(rows)
        assert plot[-1].split()[0] == "now", "\n".join(plot)
        assert plot[-2].split()[0] == "-5s", plot[-2]
        shares = [_bar(row).count("W") / len(_bar(row)) for row in plot]
        assert max(shares) > 0.5 and min(shares) < 0.05, "\n".join(plot)
        starved = [share > 0.3 for share in shares]
        changes = sum(1 for a, b in itertools.pairwise(starved) if a != b)
        assert changes >= 3, "starved, fed, starved again, fed again: \n" + "\n".join(plot)


def _timed_steps(first: int, count: int, start_s: float, wait_ms: float) -> tuple:
    """``count`` 100 ms steps from step ``first``, the first beginning at ``start_s`` on the steps' clock."""
    return tuple(
        dataclasses.replace(step, step=first + i, start_monotonic_ns=int((start_s + i * 0.1) * 1e9))
        for i, step in enumerate(steps(count, wait_ms=wait_ms))
    )


async def test_a_job_seen_for_under_a_minute_fills_the_strip_with_rows_of_a_second() -> None:
    """`xfertop demo` at 200x50 on a box without a GPU, 45 s into its job: rows of 5 s would leave some
    25 of the strip's rows blank for the next two minutes; rows of a second fill it now, and longer rows
    take over as the history grows."""
    young = dataclasses.replace(rank(), steps=_timed_steps(0, 450, 1000.0, wait_ms=60.0))  # 45 s
    app = _app(note="demo: phase 1 of 2, starved (num_workers=0)")
    async with app.run_test(size=(200, 50)) as pilot:
        await _feed(app, pilot, no_driver_state(), jobs_state(young), step_history=False)
        rows = screen_text(app)
        assert any("a row per 1 s" in row for row in rows), "\n".join(rows)
        assert blank_rows(rows) <= MAX_BLANK_ROWS, "\n".join(rows)
        plot = _strip_rows(app)
        assert plot[-1].split()[0] == "now" and plot[-2].split()[0] == "-1s", "\n".join(plot)


async def test_an_ended_jobs_strip_counts_back_from_its_end_not_from_now() -> None:
    """A new user's trial: an ended job's strip still labelled its last row "now"."""
    ended = dataclasses.replace(rank(status="finished"), steps=_timed_steps(0, 450, 1000.0, wait_ms=60.0))
    app = _app()
    async with app.run_test(size=(200, 50)) as pilot:
        await _feed(app, pilot, no_driver_state(), jobs_state(ended), step_history=False)
        plot = _strip_rows(app)
        assert plot[-1].split()[0] == "end" and plot[-2].split()[0] == "-1s", "\n".join(plot)


@pytest.mark.parametrize(("history_s", "seconds"), [(1, 1), (45, 1), (70, 2), (159, 2), (160, 5), (3600, 5)])
def test_rows_grow_longer_as_the_history_does_until_they_cover_the_minute_and_a_half(
    history_s: int, seconds: int
) -> None:
    """32 rows: a second each until 32 s of steps are kept, then the longest rows the history fills,
    then the 5 s rows whose 32 cover 90 s."""
    from xfertop.ui.step_strip import bucket_seconds

    assert bucket_seconds(32, history_s) == seconds
    assert bucket_seconds(32) == 5


async def test_between_buckets_only_the_newest_row_changes_and_a_closed_bucket_keeps_its_mean(
    monkeypatch,
) -> None:
    """Steps that land in the open bucket change its row alone (the rest of the strip is not repainted);
    when a later bucket opens, every row moves up one and the closed bucket's row keeps its bar."""
    from xfertop.ui import step_strip

    monkeypatch.setattr(step_strip, "DRAW_PERIOD_S", 0.0)  # every snapshot is drawn
    monkeypatch.setattr(step_strip, "YOUNG_DRAW_PERIOD_S", 0.0)  # the first, young, strip's too
    starved = _timed_steps(0, 380, 1000.0, wait_ms=60.0)  # 1000.0-1037.9 s
    app = _app()

    async def show(history: tuple) -> list[str]:
        app.post_message(JobsStateUpdated(jobs_state(dataclasses.replace(rank(), steps=history))))
        app.post_message(GpuStateUpdated(gpu_state(1)))  # the pulse that repaints what is dirty
        await pilot.pause()
        await pilot.pause()
        return _strip_rows(app)

    async with app.run_test(size=(160, 48)) as pilot:
        await _feed(app, pilot, gpu_state(1), jobs_state(), step_history=False)
        before = await show(starved)
        assert "a row per 5 s" in str(app.jobs_pane.strip.lines[0])
        assert before[-1].split()[:2] == ["now", "30"], "\n".join(before)  # 1035.0-1037.9 s
        # Fed steps in the same bucket: its row alone changes.
        fed = _timed_steps(380, 10, 1038.0, wait_ms=2.0)
        during = await show(starved + fed)
        changed = [y for y, (a, b) in enumerate(zip(before, during, strict=True)) if a != b]
        assert changed == [len(before) - 1], (changed, "\n".join(during))
        assert during[-1].split()[:2] == ["now", "40"] and _bar(during[-1]) != _bar(before[-1])
        closed_bar = _bar(during[-1])
        # A step in the next bucket: every row moves up one, the closed bucket's bar as it was.
        later = _timed_steps(390, 1, 1041.0, wait_ms=2.0)
        after = await show(starved + fed + later)
        assert [_bar(row) for row in after[:-1]] == [_bar(row) for row in during[1:]], "\n".join(after)
        assert after[-2].split()[:2] == ["-5s", "40"], "\n".join(after)
        # Steps later still, after a bucket without any: the closed bucket's row again, two rows higher.
        evenlater = _timed_steps(391, 20, 1050.0, wait_ms=90.0)
        last = await show(starved + fed + later + evenlater)
        assert last[-4].split()[:2] == ["-15s", "40"] and _bar(last[-4]) == closed_bar, "\n".join(last)
        assert "no step began" in last[-2], "\n".join(last)


async def _pulse_with_steps(app: XfertopApp, pilot, history: tuple) -> None:
    """A jobs snapshot whose rank holds ``history``, then the GPU sample that repaints what is dirty."""
    app.post_message(JobsStateUpdated(jobs_state(dataclasses.replace(rank(), steps=history))))
    app.post_message(GpuStateUpdated(gpu_state(1)))
    await pilot.pause()
    await pilot.pause()
    assert len(app.view.jobs.jobs[0].ranks[0].steps) == len(history), "the new steps reached the view"


async def _strip_redrawn(app: XfertopApp, pilot, drawn: list[str]) -> list[str]:
    """The strip's rows once they differ from ``drawn`` (its catch-up timer; 10 s at most)."""
    deadline = time.monotonic() + 10.0
    while _strip_rows(app) == drawn and time.monotonic() < deadline:
        await pilot.pause(0.1)
    return _strip_rows(app)


async def test_the_strip_takes_new_steps_at_most_once_a_period_and_catches_up(monkeypatch) -> None:
    """At 4 Hz the strip's newest row would change four times a second: new steps of the same rank wait
    for the strip's period, then are drawn without another snapshot coming (the job may have ended)."""
    from xfertop.ui import step_strip

    monkeypatch.setattr(step_strip, "DRAW_PERIOD_S", 3.0)
    monkeypatch.setattr(step_strip, "BUCKET_STEPS_S", (5, 10))  # rows of 5 s from the first step on
    # Thirty steps of ~103 ms, then thirty more alike (the verdict, and so the strip's height, stay).
    first = steps(30, wait_ms=60.0)
    more = first + tuple(dataclasses.replace(step, step=step.step + 30) for step in steps(30, wait_ms=60.0))
    app = _app()
    async with app.run_test(size=(160, 48)) as pilot:
        await _feed(
            app, pilot, gpu_state(1), jobs_state(dataclasses.replace(rank(), steps=first)), step_history=False
        )
        drawn = _strip_rows(app)
        assert drawn[-1].split()[:2] == ["now", "30"], "\n".join(drawn)
        await _pulse_with_steps(app, pilot, more)
        assert _strip_rows(app) == drawn, "drawn again within the period"
        # The steps' 6.2 s: the first bucket closed with 49 steps, the newest holds the other 11.
        rows = await _strip_redrawn(app, pilot, drawn)
        assert [row.split()[:2] for row in rows[-2:]] == [["-5s", "49"], ["now", "11"]], "\n".join(rows)


async def test_a_young_strip_whose_rows_all_move_each_second_is_drawn_every_few_seconds(monkeypatch) -> None:
    """Rows of a second (a history under a minute) move up one at every new second: each drawing repaints
    every row. Such a strip takes new steps only every YOUNG_DRAW_PERIOD_S, then catches up without
    another snapshot, as a strip of covering rows does every DRAW_PERIOD_S."""
    from xfertop.ui import step_strip

    monkeypatch.setattr(step_strip, "DRAW_PERIOD_S", 0.0)  # covering rows: every snapshot is drawn
    monkeypatch.setattr(step_strip, "YOUNG_DRAW_PERIOD_S", 2.0)
    first = _timed_steps(0, 100, 1000.0, wait_ms=60.0)  # 10 s of steps: rows of a second
    app = _app()
    async with app.run_test(size=(160, 48)) as pilot:
        await _feed(
            app, pilot, gpu_state(1), jobs_state(dataclasses.replace(rank(), steps=first)), step_history=False
        )
        drawn = _strip_rows(app)
        assert "a row per 1 s" in str(app.jobs_pane.strip.lines[0])
        assert drawn[-1].split()[:2] == ["now", "10"], "\n".join(drawn)
        await _pulse_with_steps(app, pilot, first + _timed_steps(100, 10, 1010.0, wait_ms=60.0))
        assert _strip_rows(app) == drawn, "a young strip is not drawn again within its period"
        rows = await _strip_redrawn(app, pilot, drawn)
        assert [row.split()[:2] for row in rows[-2:]] == [["-1s", "10"], ["now", "10"]], "\n".join(rows)


async def test_eight_gpus_on_a_small_terminal_leave_the_rows_to_the_ranks_and_the_verdict() -> None:
    """Eight GPUs at 80x24: the GPU area shrinks to a few lines (it scrolls) before the ranks do, and the
    ranks' table scrolls before the verdict leaves the screen."""
    app = _app()
    ranks = jobs_state(*(rank(rank_index=i, world=8, workers=4) for i in range(8)))
    async with app.run_test(size=(80, 24)) as pilot:
        await _feed(app, pilot, gpu_state(8), ranks)
        rows = screen_text(app)
        shown_ranks = [row for row in rows if row.startswith(" train.py  ") and "/8 " in row]
        gpu_lines = [row for row in rows if row.startswith(tuple(f"{i} H200" for i in range(8)))]
        assert len(shown_ranks) >= 3 and len(gpu_lines) <= 3, "\n".join(rows)
        assert any(row.startswith(" train.py: input-bound") for row in rows), "\n".join(rows)


async def test_a_new_ranks_strip_shows_its_few_steps_and_a_rankless_job_by_pid() -> None:
    """Five steps in: one row, "now", holding 5 steps, and nothing drawn above the history's start; a job
    without ranks (no torchrun) is named by its pid, not "rank -"."""
    app = _app()
    young = dataclasses.replace(rank(), rank=None, world_size=None, steps=steps(count=5))
    async with app.run_test(size=(80, 24)) as pilot:
        await _feed(app, pilot, gpu_state(1), jobs_state(young), step_history=False)
        rows = screen_text(app)
        # At 80 columns the title is short, its legend whole: "train.py pid N, a row per 1 s  W wait ...".
        assert any(" train.py pid " in row and "S sync" in row for row in rows), "\n".join(rows)
        plot = _strip_rows(app)
        assert plot[-1].split()[:2] == ["now", "5"] and "W" in _bar(plot[-1]), "\n".join(rows)
        assert not any(row.strip() for row in plot[:-1]), "no rows before the history began"
        assert not any(" rank -," in row for row in rows)


async def test_a_job_that_comes_after_the_start_takes_the_focus_so_enter_opens_it() -> None:
    """On a box without a GPU the processes take the focus at the start (`xfertop demo` starts its job
    after the view): when the job comes its table takes it, and Enter opens the rank's detail at once."""
    from xfertop.ui.job_detail import JobDetailScreen

    app = _app()
    async with app.run_test(size=(120, 40)) as pilot:
        empty = dataclasses.replace(jobs_state(), jobs=())
        await _feed(app, pilot, no_driver_state(), empty)
        assert app.screen.focused is not None and app.screen.focused.id == "processes"
        app.post_message(JobsStateUpdated(jobs_state()))
        await pilot.pause()
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, JobDetailScreen)


async def test_one_slow_step_does_not_flatten_the_detail_charts() -> None:
    """A checkpoint step 20 times the others: the detail's charts keep the usual steps' shape and say
    that one step goes past their top, and how long it was."""
    from xfertop.ui.job_detail import JobDetailScreen

    usual = steps(60, wait_ms=41.0)
    history = (*usual[:30], dataclasses.replace(usual[30], wall_ms=2000.0), *usual[31:])
    app = _app()
    async with app.run_test(size=(120, 40)) as pilot:
        await _feed(app, pilot, gpu_state(1), jobs_state(dataclasses.replace(rank(), steps=history)))
        app.jobs_pane.rank_table.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, JobDetailScreen)
        rows = screen_text(app)
        title = next(i for i, row in enumerate(rows) if "step time per step" in row)
        assert "1 step above it, the longest 2000ms" in rows[title], rows[title]
        chart = rows[title + 1 : next(i for i in range(title, len(rows)) if "└" in rows[i])]
        full_rows = [row for row in chart if row.count("█") >= 50]
        assert len(full_rows) >= len(chart) // 2, "\n".join(chart)
