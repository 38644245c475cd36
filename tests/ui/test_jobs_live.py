"""The jobs pane fed by the real JobsSource reading the ring of a real (CPU) demo training job."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes.fake_pynvml import FakePynvml
from ui.live import MessageWaiter, fake_gpu_source
from xfertop.launch.demo import DemoJob, start_demo_job
from xfertop.launch.keep import keep_json
from xfertop.sources.bundle import Sources
from xfertop.sources.host.source import HostSource
from xfertop.sources.jobs.source import JobsSource
from xfertop.ui.app import XfertopApp
from xfertop.ui.job_detail import JobDetailScreen
from xfertop.ui.jobs_pane import RankTable
from xfertop.ui.messages import GpuStateUpdated, JobsStateUpdated
from xfertop.ui.process_table import ProcessTable

#: Enough steps for a full analysis window (warm-up plus window) on this rank.
STEPS_FOR_A_WINDOW = 40


@pytest.fixture
def demo_job(tmp_path: Path) -> Iterator[DemoJob]:
    job = start_demo_job(ring_dir=tmp_path / "rings", phase_seconds=60.0, device="cpu")
    try:
        yield job
    finally:
        job.stop()


def _drawn_with_a_window(app: XfertopApp):
    """A GPU sample (a repaint) once the app's view holds a full window of the rank's steps: ring reads
    reach the view at repaints, and only new jobs, ranks or rank states come as messages."""

    def check(message: object) -> bool:
        jobs = app.view.jobs
        return (
            isinstance(message, GpuStateUpdated)
            and jobs is not None
            and bool(jobs.jobs)
            and len(jobs.jobs[0].ranks[0].steps) >= STEPS_FOR_A_WINDOW
        )

    return check


async def test_a_live_job_shows_its_rank_verdict_and_detail(demo_job: DemoJob) -> None:
    # A probe of the same script, kept as `xfertop probe` keeps it: the detail names what it measured.
    probe = {
        "job": "demo_job.py",
        "argv": ["python", "demo_job.py"],
        "finished_unix_s": time.time() - 600,
        "complete": True,
        "ranks": [
            {
                "rank": None,
                "baseline_step_s": 0.0212,
                "speedup_input_free": 3.4,
                "speedup_pinned": 3.41,  # nothing was pinned (a CPU job): input free again, left out
                "tensors_pinned": 0,
                "speedup_copy_free": 3.5,
                "copies_made_resident": 2,
            }
        ],
    }
    assert keep_json(probe, str(demo_job.ring_dir), "probes", "20261202T120000-1-demo_job.py.json", 20)
    sources = Sources(
        gpu=fake_gpu_source(FakePynvml.h200s(1)),
        host=HostSource(interval_s=0.2),
        jobs=JobsSource(interval_s=0.1, ring_dir=str(demo_job.ring_dir)),
    )
    app = XfertopApp(sources)
    waiter = MessageWaiter()
    async with app.run_test(size=(160, 48), message_hook=waiter) as pilot:
        await waiter.wait_for(_drawn_with_a_window(app), timeout_s=60)
        await pilot.pause()
        table = app.query_one(RankTable)
        assert table.row_count == 1
        row = table.row(table.row_keys[0])
        assert row["JOB"] == "demo_job.py" and row["STATUS"] == "live"
        assert row["STEP"].endswith("ms") and row["WAIT"].endswith("%") and row["HISTORY"].strip()
        verdicts = "\n".join(line.plain for line in app.jobs_pane.verdicts.lines)
        assert verdicts.startswith("demo_job.py: ")
        assert str(demo_job.pid) in app.query_one(ProcessTable).row_keys

        table.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, JobDetailScreen) and app.screen.pid == demo_job.pid
        detail = str(app.screen.query_one("#job-detail").render())
        assert "median step" in detail and "samples/s" in detail
        assert "last probe (" in detail and "10 min ago): as is 21.2ms a step; input free 3.40x" in detail
        assert "copies free 3.50x" in detail and "pinned copies" not in detail


async def test_a_job_that_ends_says_how_it_ended_in_its_row(demo_job: DemoJob) -> None:
    """The STATUS column says how the rank ended, as the verdict line does: a new user's trial read
    "finished" beside "(exited 3)" and "(exited 130)"."""
    sources = Sources(jobs=JobsSource(interval_s=0.1, ring_dir=str(demo_job.ring_dir)))
    app = XfertopApp(sources)
    waiter = MessageWaiter()
    async with app.run_test(size=(120, 40), message_hook=waiter) as pilot:
        await waiter.wait_for(lambda m: isinstance(m, JobsStateUpdated) and bool(m.state.jobs), 60)
        demo_job.stop()
        await waiter.wait_for(
            lambda m: (
                isinstance(m, JobsStateUpdated)
                and bool(m.state.jobs)
                and m.state.jobs[0].ranks[0].status == "finished"
            ),
            30,
        )
        await pilot.pause()
        table = app.query_one(RankTable)
        assert table.row(table.row_keys[0])["STATUS"] == "ended"  # closed its ring: stopped cleanly


async def test_until_a_job_steps_the_pane_says_what_it_was_told_to(tmp_path: Path) -> None:
    # `xfertop demo` names its demo job here while it imports torch and builds its model (10 s on the
    # H200), instead of "no training jobs of this user found".
    from xfertop.cli.demo import demo_starting_text

    text = demo_starting_text(4242)
    sources = Sources(jobs=JobsSource(interval_s=0.1, ring_dir=str(tmp_path / "rings")))
    app = XfertopApp(sources, no_jobs_text=text)
    async with app.run_test(size=(120, 40)) as pilot:
        deadline = time.monotonic() + 30
        while sources.jobs.latest() is None and time.monotonic() < deadline:  # its first read, empty
            await pilot.pause(0.05)
        assert sources.jobs.latest() is not None
        await pilot.pause()
        empty = app.query_one("#jobs-empty")
        assert empty.display and "the demo job (pid 4242) is starting" in str(empty.render())
