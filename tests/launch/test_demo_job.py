"""The demo job, run for real on the CPU: it starves, fixes itself, and the viewer's verdict follows."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from xfertop.analysis.verdict import Verdict, job_verdict, rank_verdict
from xfertop.launch.demo import DemoJob, demo_job_command, start_demo_job
from xfertop.model.jobs import RankState
from xfertop.sources.jobs.source import JobsSource

#: Bounded polling of another process's ring: generous, because CI machines are shared and slow.
TIMEOUT_S = 120.0
POLL_S = 0.25

#: Runs the demo job as if torch were not installed (an import of it raises ImportError).
WITHOUT_TORCH = (
    "import sys; sys.modules['torch'] = None; from xfertop.launch.demo_job import main; "
    "sys.exit(main(sys.argv[1:]))"
)


@pytest.fixture
def ring_dir(tmp_path: Path) -> Path:
    path = tmp_path / "rings"
    path.mkdir(mode=0o700)
    return path


def rank_of(source: JobsSource, pid: int) -> RankState | None:
    for job in source.sample_once().jobs:
        for rank in job.ranks:
            if rank.pid == pid:
                return rank
    return None


def poll_rank(source: JobsSource, job: DemoJob, done: Callable[[RankState, Verdict], bool]) -> RankState:
    """Read the job's ring until ``done(rank, verdict)``; fails with the job's log if it never is."""
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        rank = rank_of(source, job.pid)
        if rank is not None and done(rank, job_verdict([rank])):
            return rank
        if not job.running:
            break
        time.sleep(POLL_S)
    pytest.fail(
        f"the demo job's ring never showed it (exit status {job.process.poll()}); log:\n{job.log_text()}"
    )


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_demo_job_starves_then_fixes_itself_and_the_verdict_follows(
    ring_dir: Path, tmp_path: Path, device: str
) -> None:
    source = JobsSource(ring_dir=str(ring_dir))
    with start_demo_job(
        ring_dir=ring_dir, log_path=tmp_path / "demo.log", phase_seconds=12.0, device=device
    ) as job:
        starved = poll_rank(source, job, lambda rank, verdict: verdict.kind == "input-bound")
        assert starved.dataloader_workers == 0
        starved_verdict = job_verdict([starved])
        assert "num_workers" in " ".join(starved_verdict.advice)
        if device == "cuda":  # the GPU felt the wait, and the pageable non_blocking copies were seen
            assert starved_verdict.evidence["clock"] == "gpu"
            assert starved_verdict.evidence["pageable_non_blocking_step_fraction"] == 1.0

        fixed = poll_rank(
            source,
            job,
            lambda rank, verdict: (
                bool(rank.dataloader_workers) and verdict.kind in ("compute-bound", "healthy")
            ),
        )
        assert fixed.device.startswith(device) and fixed.status == "live"

        assert job.stop() == 0  # SIGTERM ends it cleanly
    log = (tmp_path / "demo.log").read_text()
    assert "Phase 1, starved: num_workers=0" in log and "phase 2, fixed" in log
    assert "Traceback" not in log and "Warning" not in log
    assert rank_of(source, job.pid).status == "finished"  # type: ignore[union-attr]


def test_demo_job_exits_cleanly_on_sigint(ring_dir: Path, tmp_path: Path) -> None:
    source = JobsSource(ring_dir=str(ring_dir))
    with start_demo_job(ring_dir=ring_dir, log_path=tmp_path / "demo.log", device="cpu") as job:
        poll_rank(source, job, lambda rank, verdict: len(rank.steps) >= 2)
        job.process.send_signal(signal.SIGINT)
        assert job.wait(timeout_s=30) == 0
    assert "Traceback" not in (tmp_path / "demo.log").read_text()


def run_without_torch(ring_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XFERTOP_DIR": str(ring_dir)}
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_TORCH, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )


def test_without_torch_the_demo_simulates_the_same_story(ring_dir: Path) -> None:
    done = run_without_torch(ring_dir, "--phase-seconds", "60", "--phase-steps", "60", "--once-fixed")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (
        "xfertop demo: torch is not installed, so this is a pure-Python simulation of a training loop."
    )
    assert done.stderr == ""

    (job,) = JobsSource(ring_dir=str(ring_dir)).sample_once().jobs
    steps = job.ranks[0].steps
    assert len(steps) == 120
    assert rank_verdict(steps[:60]).kind == "input-bound"
    assert rank_verdict(steps).kind == "compute-bound"


def test_the_demo_job_goes_when_its_parent_goes(ring_dir: Path) -> None:
    """`xfertop demo` may be killed outright; its demo job must not train on forever unseen."""
    parent = (
        "import os, subprocess, sys; p = subprocess.Popen([sys.executable, '-c', sys.argv[1], "
        "'--phase-seconds', '600', '--parent-pid', str(os.getpid())], stdout=subprocess.DEVNULL, "
        "stderr=subprocess.DEVNULL); print(p.pid)"
    )
    env = {**os.environ, "XFERTOP_DIR": str(ring_dir)}
    started = subprocess.run(
        [sys.executable, "-c", parent, WITHOUT_TORCH], env=env, capture_output=True, text=True, timeout=60
    )
    orphan_pid = int(started.stdout)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and Path(f"/proc/{orphan_pid}").exists():
        with open(f"/proc/{orphan_pid}/stat") as stat:
            if stat.read().split(") ")[-1].startswith("Z"):
                break  # exited; a zombie until its new parent reaps it
        time.sleep(POLL_S)
    else:
        if Path(f"/proc/{orphan_pid}").exists():
            os.kill(orphan_pid, signal.SIGKILL)
            pytest.fail("the orphaned demo job kept running")
    orphan = rank_of(JobsSource(ring_dir=str(ring_dir)), orphan_pid)
    assert orphan is not None and orphan.steps, "the demo job never ran a step"


def test_demo_command_passes_the_phase_flags_through() -> None:
    command = demo_job_command(
        phase_seconds=3.5, phase_steps=40, device="cuda:1", once_fixed=True, python="python3"
    )
    assert command[:3] == ["python3", "-m", "xfertop.launch.demo_job"]
    assert command[3:] == [
        "--phase-seconds",
        "3.5",
        "--device",
        "cuda:1",
        "--parent-pid",
        str(os.getpid()),
        "--phase-steps",
        "40",
        "--once-fixed",
    ]
