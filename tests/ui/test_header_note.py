"""`xfertop demo` says which phase it is in: a second header line from the demo job's own log."""

from __future__ import annotations

from pathlib import Path

from ui.sample_states import FROZEN_TIME
from xfertop.launch.demo import DemoJob, demo_phase
from xfertop.sources.bundle import Sources
from xfertop.ui.app import XfertopApp

STARVED = (
    "xfertop demo job (pid 7): on cpu; a step computes in ~45 ms, a batch takes ~135 ms to load. "
    "Phase 1, starved: num_workers=0, pageable memory.\n"
)
FIXED = (
    "xfertop demo job (pid 7): phase 2, fixed: num_workers=2 (cores: 2), pin_memory=False, "
    "non_blocking copies, prefetch_factor=4, persistent_workers.\n"
)


def test_the_demo_phase_is_read_from_the_jobs_announcements() -> None:
    assert demo_phase("") is None
    assert demo_phase(STARVED) == "demo phase 1 of 2, starved: num_workers=0, pageable memory"
    assert demo_phase(STARVED + FIXED).startswith("demo phase 2 of 2, fixed: num_workers=2 (cores: 2)")
    assert demo_phase(STARVED + FIXED + "xfertop demo job (pid 7): fixed phase over; exiting.\n") == (
        "demo over: the fixed phase has ended"
    )


async def test_the_header_shows_the_demo_phase_as_the_log_grows(tmp_path: Path) -> None:
    log = tmp_path / "demo.log"
    log.write_text("")
    job = DemoJob(process=None, log_path=log, ring_dir=tmp_path)  # type: ignore[arg-type]
    app = XfertopApp(Sources(), start_sources=False, clock=lambda: FROZEN_TIME, note=job.phase_text)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert len(app.header_bar.lines) == 1  # nothing announced yet: one line
        log.write_text(STARVED)
        app.header_bar.update_lines()
        await pilot.pause()
        assert app.header_bar.lines[1].plain == " demo phase 1 of 2, starved: num_workers=0, pageable memory"
        assert app.header_bar.size.height == 2
        log.write_text(STARVED + FIXED)
        app.header_bar.update_lines()
        await pilot.pause()
        assert app.header_bar.lines[1].plain.startswith(" demo phase 2 of 2, fixed")
