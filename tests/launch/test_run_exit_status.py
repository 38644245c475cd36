"""How a job ended, under `xfertop run`: the launcher records its command's exit status or signal in the
rings of every process the command started, and the viewer shows it as RankState.end."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

from ring_test_tools import child_env, ranks, wait_until
from xfertop.analysis.job_analysis import analyse
from xfertop.model.jobs import RankState
from xfertop.sources.jobs.source import JobsSource

TRAIN = """
import os, signal, sys
import torch
from torch.utils.data import DataLoader, TensorDataset

loader = DataLoader(TensorDataset(torch.ones(32, 4)), batch_size=4)
if os.environ.get("XFERTOP_RUN") != "1":  # started without xfertop run: the two-line instrumentation
    import xfertop
    loader = xfertop.watch(loader)
for (batch,) in loader:
    pass
how = sys.argv[1]
if how == "SIGKILL":
    os.kill(os.getpid(), signal.SIGKILL)
sys.exit(int(how))
"""

# What torchrun does, in miniature: the command itself trains nothing; it starts a rank and waits for it.
# It ends a second after its rank, as a launcher that tears the other ranks down would: by then a live
# viewer has taken the rank's ring for final, so this checks that the status still reaches it.
LAUNCHER_LIKE = """
import subprocess, sys, time
rank = subprocess.run([sys.executable, sys.argv[1], "0"], env={**__import__("os").environ, "RANK": "0",
                      "WORLD_SIZE": "1", "LOCAL_RANK": "0"})
print("rank ended", rank.returncode, flush=True)
time.sleep(1.0)
sys.exit(1)
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    script = tmp_path / name
    script.write_text(textwrap.dedent(text))
    return script


def _run(tmp_path: Path, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "xfertop.cli.run", "--no-summary", "--", *command],
        env=child_env(tmp_path / "rings"),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _ended_rank(tmp_path: Path) -> RankState:
    [rank] = ranks(JobsSource(ring_dir=str(tmp_path / "rings")))
    assert rank.status == "finished" and rank.end is not None
    return rank


def _ended_how(tmp_path: Path) -> tuple[str, ...]:
    state = JobsSource(ring_dir=str(tmp_path / "rings")).sample_once()
    [job] = analyse(state, None).jobs
    return job.ended_how


def test_a_job_that_exits_0_is_recorded_as_exited_0(tmp_path: Path) -> None:
    script = _write(tmp_path, "train.py", TRAIN)
    assert _run(tmp_path, sys.executable, str(script), "0").returncode == 0
    end = _ended_rank(tmp_path).end
    assert end is not None
    assert (end.exit_code, end.signal, end.closed_ring, end.failed) == (0, None, True, False)
    assert _ended_how(tmp_path) == ("exited 0",)


def test_a_job_that_exits_3_is_recorded_as_exited_3_and_xfertop_still_exits_3(tmp_path: Path) -> None:
    script = _write(tmp_path, "train.py", TRAIN)
    assert _run(tmp_path, sys.executable, str(script), "3").returncode == 3
    end = _ended_rank(tmp_path).end
    assert end is not None and (end.exit_code, end.signal, end.failed) == (3, None, True)
    assert _ended_how(tmp_path) == ("exited 3",)


def test_a_job_killed_by_sigkill_is_recorded_as_killed_and_xfertop_dies_the_same_way(tmp_path: Path) -> None:
    script = _write(tmp_path, "train.py", TRAIN)
    result = _run(tmp_path, sys.executable, str(script), "SIGKILL")
    assert result.returncode == -signal.SIGKILL, result.stderr
    end = _ended_rank(tmp_path).end
    assert end is not None and (end.exit_code, end.signal, end.closed_ring) == (None, signal.SIGKILL, False)
    assert _ended_how(tmp_path) == ("killed by SIGKILL",)


def test_a_rank_started_by_a_launcher_gets_the_launchers_status_even_in_a_live_viewer(tmp_path: Path) -> None:
    train = _write(tmp_path, "train.py", TRAIN)
    launcher = _write(tmp_path, "launcher.py", LAUNCHER_LIKE)
    source = JobsSource(ring_dir=str(tmp_path / "rings"))
    seen: list[RankState] = []
    done = threading.Event()

    def watch() -> None:  # a live viewer, polling at its own pace throughout
        while not done.is_set():
            seen.extend(ranks(source))
            done.wait(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        result = _run(tmp_path, sys.executable, str(launcher), str(train))
        assert (result.returncode, result.stdout) == (1, "rank ended 0\n"), result.stderr
        final = wait_until(
            lambda: [r for r in seen[-1:] if r.end and r.end.exit_code is not None],
            15,
            "the launcher's status in the live viewer",
        )
    finally:
        done.set()
        watcher.join()
    # The rank had been seen ended (ring closed, no status yet) before its command ended.
    assert any(r.end is not None and r.end.exit_code is None for r in seen)
    [rank] = final
    assert rank.end is not None and (rank.end.exit_code, rank.end.closed_ring) == (1, True)
    assert rank.rank == 0
    assert _ended_how(tmp_path) == ("exited 1",)


def test_a_rank_killed_without_xfertop_run_ended_without_closing_its_ring(tmp_path: Path) -> None:
    script = _write(tmp_path, "train.py", TRAIN)
    plain = subprocess.run(
        [sys.executable, str(script), "SIGKILL"],
        env=child_env(tmp_path / "rings"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert plain.returncode == -signal.SIGKILL
    end = _ended_rank(tmp_path).end
    assert end is not None
    assert (end.exit_code, end.signal, end.closed_ring, end.failed) == (None, None, False, True)
    assert _ended_how(tmp_path) == ("ended without closing its ring",)


def test_a_rank_of_another_launcher_is_left_alone(tmp_path: Path) -> None:
    # Two `xfertop run`s share one ring directory: each records its status in its own command's rings only.
    script = _write(tmp_path, "train.py", TRAIN)
    assert _run(tmp_path, sys.executable, str(script), "3").returncode == 3
    assert _run(tmp_path, sys.executable, str(script), "0").returncode == 0
    state = JobsSource(ring_dir=str(tmp_path / "rings")).sample_once()
    codes = sorted(rank.end.exit_code for job in state.jobs for rank in job.ranks if rank.end is not None)
    assert codes == [0, 3]
    assert len(os.listdir(tmp_path / "rings")) == 2


def test_a_zombie_counts_as_running_until_it_is_reaped() -> None:
    # What the launcher's ordering rests on: between waitid(WNOWAIT) and the reap, the command is a zombie,
    # and the viewer must not take its ring for final yet.
    from xfertop.launch.exit_record import wait_without_reaping
    from xfertop.sources.jobs.ring_reader import process_alive
    from xfertop.wire import process_start_ticks

    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read(); sys.exit(7)"], stdin=subprocess.PIPE
    )
    ticks = process_start_ticks(child.pid)
    assert child.stdin is not None
    child.stdin.close()
    assert wait_without_reaping(child.pid) == 7
    assert process_alive(child.pid, ticks)  # a zombie: /proc still shows its pid and start time
    assert child.wait() == 7
    assert not process_alive(child.pid, ticks)
