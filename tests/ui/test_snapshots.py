"""How the screens look, as SVG snapshots: fixed snapshots fed in, frozen clock, no source threads.

Update after an intended change with `pytest tests/ui/test_snapshots.py --snapshot-update` and look at
the diff report before committing.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable

import pytest
from textual.pilot import Pilot

from ui.sample_states import (
    FROZEN_TIME,
    gpu_state,
    host_state,
    jobs_state,
    no_driver_state,
    rank,
    with_step_history,
)
from ui.screen_text import blank_rows, screen_text
from ui.topology_support import SYNTHETIC_PROC, SYNTHETIC_SYSFS, synthetic_nvml
from xfertop.model.gpu import GpuState
from xfertop.model.jobs import JobsState
from xfertop.model.topology import WatchedProcess
from xfertop.sources.bundle import Sources
from xfertop.sources.gpu.nvml_api import NvmlApi
from xfertop.sources.topology.source import read_topology
from xfertop.ui.app import XfertopApp
from xfertop.ui.messages import GpuStateUpdated, HostStateUpdated, JobsStateUpdated, TopologyUpdated

HISTORY_POINTS = 120
#: One GPU and one job on a big terminal leave at most this many rows empty (issue 12).
MAX_BLANK_ROWS = 4


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    """The header shows local time: pin the zone so the frozen clock reads the same everywhere."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


def _app() -> XfertopApp:
    return XfertopApp(Sources(), start_sources=False, clock=lambda: FROZEN_TIME)


def _feed(app: XfertopApp, gpus: GpuState, jobs: JobsState, gpu_count: int) -> Callable:
    """run_before: a deterministic traffic history (a slow wave) and three minutes of the jobs' steps
    (starved and fed in turn), then the fixed snapshots."""

    async def run_before(pilot: Pilot) -> None:
        for i in range(HISTORY_POINTS):
            wave = 1 + math.sin(i / 6)
            sample = gpu_state(gpu_count, rx=27e9 * wave, tx=2.5e9 * wave, util=40 * wave)
            # One sample a second, as at 1 Hz: each is a point of the charts.
            app.view.apply_gpu(dataclasses.replace(sample, timestamp=FROZEN_TIME - HISTORY_POINTS + i))
        app.view.apply_jobs(with_step_history(jobs))
        app.post_message(GpuStateUpdated(gpus))
        app.post_message(HostStateUpdated(host_state()))
        app.post_message(JobsStateUpdated(jobs))
        await pilot.pause()

    return run_before


def _fills_the_screen(app: XfertopApp, size: tuple[int, int]) -> None:
    """From 160x48 up, no more than MAX_BLANK_ROWS of the screen are empty."""
    if size[0] >= 160:
        rows = screen_text(app)
        assert blank_rows(rows) <= MAX_BLANK_ROWS, "\n".join(rows)


@pytest.mark.parametrize("size", [(80, 24), (160, 48), (200, 50)])
def test_main_screen(snap_compare, size: tuple[int, int]) -> None:
    app = _app()
    feed = _feed(app, gpu_state(1), jobs_state(), 1)

    async def run_before(pilot: Pilot) -> None:
        await feed(pilot)
        _fills_the_screen(app, size)
        rows = screen_text(app)
        assert any(row.startswith(" train.py: input-bound") for row in rows), "the live verdict is in view"

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_eight_gpus(snap_compare, size: tuple[int, int]) -> None:
    app = _app()
    jobs = jobs_state(*(rank(rank_index=i, world=8, workers=4) for i in range(8)))
    assert snap_compare(app, terminal_size=size, run_before=_feed(app, gpu_state(8), jobs, 8))


def test_slow_link_and_sampled_figures(snap_compare) -> None:
    app = _app()
    slow = gpu_state(1, gen=3, method="sampled")
    assert snap_compare(app, terminal_size=(160, 48), run_before=_feed(app, slow, jobs_state(), 1))


def test_no_driver(snap_compare) -> None:
    app = _app()
    no_driver = no_driver_state()

    async def run_before(pilot: Pilot) -> None:
        app.post_message(GpuStateUpdated(no_driver))
        app.post_message(HostStateUpdated(host_state()))
        app.post_message(JobsStateUpdated(jobs_state(rank(status="stalled"))))
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


@pytest.mark.parametrize("size", [(80, 24), (160, 48), (200, 50)])
def test_gpu_detail(snap_compare, size: tuple[int, int]) -> None:
    app = _app()
    feed = _feed(app, gpu_state(1), jobs_state(), 1)

    async def run_before(pilot: Pilot) -> None:
        await feed(pilot)
        app.query_one("#gpu-0").focus()
        await pilot.press("enter")
        await pilot.pause()
        _fills_the_screen(app, size)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", [(160, 48), (200, 50)])
def test_job_detail(snap_compare, size: tuple[int, int]) -> None:
    app = _app()
    feed = _feed(app, gpu_state(1), jobs_state(), 1)

    async def run_before(pilot: Pilot) -> None:
        await feed(pilot)
        app.query_one("#ranks").focus()
        await pilot.press("enter")
        await pilot.pause()
        _fills_the_screen(app, size)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_help(snap_compare) -> None:
    app = _app()
    assert snap_compare(
        app,
        terminal_size=(80, 24),
        press=["question_mark"],
        run_before=_feed(app, gpu_state(1), jobs_state(), 1),
    )


def test_topology_of_eight_gpus(snap_compare) -> None:
    """The synthetic 2-socket server behind the fake NVML, both ranks placed, GPU 5 under load."""
    app = _app()
    nvml = synthetic_nvml()
    api = NvmlApi(lib=nvml)
    assert api.init() is None
    topology = read_topology(
        SYNTHETIC_SYSFS,
        SYNTHETIC_PROC,
        [WatchedProcess(4101, "0000:18:00.0", rank=0), WatchedProcess(4104, "0000:3b:00.0", rank=3)],
        api,
    )
    loaded = gpu_state(8, rx=0.0, tx=0.0)
    loaded = dataclasses.replace(
        loaded,
        gpus=tuple(
            dataclasses.replace(g, pcie=dataclasses.replace(g.pcie, rx_bytes_per_s=20e9))
            if g.index == 5
            else g
            for g in loaded.gpus
        ),
    )

    async def run_before(pilot: Pilot) -> None:
        app.post_message(GpuStateUpdated(loaded))
        app.post_message(TopologyUpdated(topology))
        await pilot.pause()
        await pilot.press("t")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)
