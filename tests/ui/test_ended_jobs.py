"""Jobs that end: live jobs first; an ended job dimmed, saying how it ended and keeping its last live
verdict; folded into one line after a while (f shows it again), then gone from the view; two jobs of the
same name told apart; at 80x24 the live job's verdict always in view."""

from __future__ import annotations

import dataclasses

from ui.sample_states import FROZEN_TIME, TRAIN_PID, gpu_state, host_state, jobs_state, rank
from ui.screen_text import screen_text
from xfertop.model.jobs import JobsState, JobState, RankEnd
from xfertop.sources.bundle import Sources
from xfertop.ui.app import XfertopApp
from xfertop.ui.jobs_pane import EndedJobs
from xfertop.ui.key_footer import KeyFooter
from xfertop.ui.messages import GpuStateUpdated, HostStateUpdated, JobsStateUpdated


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _jobs(*jobs: JobState) -> JobsState:
    return dataclasses.replace(jobs_state(), jobs=jobs)


def _job(key: str, pid: int, ended: RankEnd | None = None) -> JobState:
    one = dataclasses.replace(rank(), pid=pid, job_key=key, ring_path=f"/tmp/xfertop-1000/{pid}.ring")
    if ended is not None:
        one = dataclasses.replace(one, status="finished", end=ended)
    return JobState(job_key=key, name="train.py", ranks=(one,))


OLD, NEW = TRAIN_PID + 10, TRAIN_PID + 20


def _verdict_rows(app: XfertopApp) -> list[str]:
    return [line.plain for line in app.jobs_pane.verdicts.lines]


async def test_an_ended_job_is_dimmed_says_how_it_ended_folds_and_goes() -> None:
    app = XfertopApp(Sources(), start_sources=False, clock=lambda: FROZEN_TIME)
    clock = Clock()
    async with app.run_test(size=(160, 48)) as pilot:
        app.jobs_pane.ended = EndedJobs(clock)
        app.post_message(GpuStateUpdated(gpu_state(1)))
        app.post_message(HostStateUpdated(host_state()))
        app.post_message(JobsStateUpdated(_jobs(_job("old", OLD), _job("new", NEW))))
        await pilot.pause()
        table = app.jobs_pane.rank_table
        # Both live, same name: told apart by pid.
        assert [table.row(key)["JOB"] for key in table.row_keys] == [f"train.py [{OLD}]", f"train.py [{NEW}]"]
        keys = app.screen.query_one(KeyFooter)
        assert "Ended jobs" not in dict(keys.labels()).values(), "f shows only once a job has ended"
        killed = RankEnd(closed_ring=False, signal=9)
        app.post_message(JobsStateUpdated(_jobs(_job("old", OLD, killed), _job("new", NEW))))
        await pilot.pause()
        # The live job first; the ended one after it, with how it ended and its last live verdict.
        assert table.row_keys == [f"new|{NEW}", f"old|{OLD}"]
        assert table.row(f"old|{OLD}")["STATUS"] == "killed by SIGKILL", "how it ended, not 'finished'"
        rows = _verdict_rows(app)
        assert rows[0].startswith(f"train.py [{NEW}]: input-bound")
        [ended] = [row for row in rows if row.startswith(f"train.py [{OLD}]")]
        assert ended.startswith(f"train.py [{OLD}] (killed by SIGKILL; last verdict): input-bound")
        assert ("f", "Ended jobs") in keys.labels()
        assert f"{OLD}" not in app.process_table.row_keys, "an ended rank is no process: no row of n/a"
        clock.now += 30
        app.post_message(GpuStateUpdated(gpu_state(1)))
        await pilot.pause()
        assert table.row_keys == [f"new|{NEW}"]
        assert "1 ended job: f shows them" in _verdict_rows(app)
        await pilot.press("f")
        await pilot.pause()
        assert table.row_keys == [f"new|{NEW}", f"old|{OLD}"]
        clock.now += app.jobs_pane.forget_s
        app.post_message(GpuStateUpdated(gpu_state(1)))
        await pilot.pause()
        assert table.row_keys == [f"new|{NEW}"]
        assert not any("ended job" in row for row in _verdict_rows(app))


async def test_at_80x24_the_live_jobs_verdict_shows_however_many_jobs_ended() -> None:
    app = XfertopApp(Sources(), start_sources=False, clock=lambda: FROZEN_TIME)
    ended = [_job(f"old{i}", OLD + i, RankEnd(closed_ring=True, exit_code=0)) for i in range(3)]
    async with app.run_test(size=(80, 24)) as pilot:
        app.post_message(GpuStateUpdated(gpu_state(1)))
        app.post_message(JobsStateUpdated(_jobs(*ended, _job("new", NEW))))
        await pilot.pause()
        rows = screen_text(app)
        assert any(row.startswith(" train.py: input-bound") for row in rows), "\n".join(rows)
        assert any("3 ended jobs: f shows them" in row for row in rows), "\n".join(rows)


async def test_a_job_that_ended_before_the_viewer_started_folds_by_its_own_age() -> None:
    """A second `xfertop demo`, started 25 s after the first, showed the first one's ended job as full rows
    with its verdict 46 s after it ended: its age counted from when this viewer first saw it. Its ranks'
    last heartbeat says how long ago it ended."""
    app = XfertopApp(Sources(), start_sources=False, clock=lambda: FROZEN_TIME)
    gone = _job("old", OLD, RankEnd(closed_ring=True, exit_code=0))
    gone = dataclasses.replace(gone, ranks=(dataclasses.replace(gone.ranks[0], heartbeat_age_s=46.0),))
    just = _job("recent", OLD + 1, RankEnd(closed_ring=True, exit_code=0))
    async with app.run_test(size=(160, 48)) as pilot:
        app.jobs_pane.ended = EndedJobs(Clock())
        app.post_message(GpuStateUpdated(gpu_state(1)))
        app.post_message(JobsStateUpdated(_jobs(gone, just, _job("new", NEW))))
        await pilot.pause()
        table = app.jobs_pane.rank_table
        assert table.row_keys == [f"new|{NEW}", f"recent|{OLD + 1}"], "the old one folded, the recent one not"
        assert "1 ended job: f shows them" in _verdict_rows(app)
