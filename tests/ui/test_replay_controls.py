"""`xfertop replay`: the real app over a recording of a real CPU job; the keys pause, step and seek, and
the status line and the jobs the app shows follow the frame."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes.fake_pynvml import FakePynvml
from ring_test_tools import wait_until
from xfertop.export.recording import RecordingWriter, Snapshot, read_recording
from xfertop.export.replay_player import ReplayPlayer
from xfertop.launch.demo import DemoJob, start_demo_job
from xfertop.model.jobs import JobsState
from xfertop.sources.gpu.nvml_api import NvmlApi
from xfertop.sources.gpu.source import GpuSource
from xfertop.sources.host.source import HostSource
from xfertop.sources.jobs.source import JobsSource
from xfertop.ui.replay_controls import ReplayApp, ReplayStatus


@pytest.fixture
def demo_job(tmp_path: Path) -> Iterator[DemoJob]:
    job = start_demo_job(ring_dir=tmp_path / "rings", phase_seconds=60.0, device="cpu")
    try:
        yield job
    finally:
        job.stop()


def _recorded_frames(job: DemoJob, path: Path, count: int) -> tuple[Snapshot, ...]:
    gpu = GpuSource(api=NvmlApi(lib=FakePynvml.h200s(1)), first_window_s=0.0)
    host, jobs = HostSource(), JobsSource(ring_dir=str(job.ring_dir))
    wait_until(lambda: any(j.ranks[0].steps for j in jobs.sample_once().jobs), 120, "the job's first steps")
    writer = RecordingWriter(str(path), interval_s=1.0)
    previous_steps = -1
    for index in range(count):
        # A new step in every frame: each frame's jobs differ from the one before.
        state = wait_until(functools.partial(_newer_read, jobs, previous_steps), 30, "a new step")
        previous_steps = state.jobs[0].ranks[0].steps[-1].step
        writer.write(Snapshot(1_000_000.0 + index, gpu.sample_once(), host.sample_once(), state))
    writer.close()
    for source in (gpu, host, jobs):
        source.close()
    return read_recording(str(path)).frames


def _newer_read(jobs: JobsSource, step: int) -> JobsState | None:
    state = jobs.sample_once()
    ranks = [rank for job in state.jobs for rank in job.ranks if rank.steps]
    return state if ranks and ranks[0].steps[-1].step > step else None


def _without_timestamp(state: JobsState | None) -> JobsState | None:
    return None if state is None else dataclasses.replace(state, timestamp=0.0)


async def test_the_keys_step_and_seek_and_the_app_shows_the_frame(demo_job: DemoJob, tmp_path: Path) -> None:
    frames = _recorded_frames(demo_job, tmp_path / "run.jsonl.gz", 6)
    player = ReplayPlayer(frames)
    player.toggle_pause()  # paused on the first frame
    app = ReplayApp(player, interval_s=0.1)
    async with app.run_test(size=(160, 48)) as pilot:
        status = app.query_one(ReplayStatus)

        async def shown(index: int) -> None:
            def drawn() -> bool:
                return _without_timestamp(app.view.jobs) == _without_timestamp(frames[index].jobs)

            for _ in range(200):
                await pilot.pause(0.02)
                if drawn():
                    break
            assert drawn(), f"frame {index + 1} not shown"
            assert f"({index + 1}/6) paused" in str(status.render())

        await shown(0)
        await pilot.press("right")
        await shown(1)
        await pilot.press("right", "right")
        await shown(3)
        await pilot.press("left")  # stepping back is drawn too
        await shown(2)
        await pilot.press("end")
        await shown(5)
        await pilot.press("home")
        await shown(0)
        assert str(status.render()).startswith("replay ")


def test_playing_follows_the_recorded_pace_and_stops_on_the_last_frame() -> None:
    now = [0.0]
    frames = [Snapshot(time=100.0 + 2 * index) for index in range(5)]  # one frame every 2 s
    player = ReplayPlayer(frames, clock=lambda: now[0])
    assert player.position() == 0
    now[0] = 3.9
    assert player.position() == 1
    player.speed = 2.0
    player.seek(1)  # from frame 1 at twice the pace
    now[0] += 2.0
    assert player.position() == 3
    player.toggle_pause()
    now[0] += 100
    assert (player.position(), player.paused) == (3, True)
    assert player.status().endswith("(4/5) paused")
    player.toggle_pause()
    now[0] += 100
    assert player.position() == 4 and player.status().endswith("(5/5) end")
    player.seek_by_s(-4.0)
    assert player.position() == 2
    player.step(-5)
    assert (player.position(), player.paused) == (0, True)
