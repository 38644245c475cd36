"""The scorer decides which attach windows were of a job's loop from the job itself, not from the verdict
under test: the time the job printed its result line ends the loop, and only the start-up before the first
verdict is left out. A "not in a training loop" in the middle of the loop is scored, as the miss it is."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from scenario_scorer import scorer


def _poll(t: float, kind: str | None) -> Any:
    return scorer.Poll(t=t, kind=kind)


def test_teardown_windows_after_the_result_line_are_not_scored() -> None:
    polls = [_poll(2.0, "input-bound"), _poll(4.5, "input-bound"), _poll(7.0, "warming-up")]
    scorer.mark_attach_stepping(polls, loop_end_s=6.0)
    assert [p.stepping for p in polls] == [True, True, False]


def test_start_up_before_the_first_verdict_is_not_scored_but_a_mid_loop_miss_is() -> None:
    polls = [
        _poll(1.0, None),
        _poll(2.5, "warming-up"),
        _poll(5.0, "input-bound"),
        _poll(7.5, "warming-up"),  # the loop still runs: a miss, scored
        _poll(10.0, "input-bound"),
    ]
    scorer.mark_attach_stepping(polls, loop_end_s=11.0)
    assert [p.stepping for p in polls] == [False, False, True, True, True]
    final = [p.kind for p in polls if p.stepping]
    assert final == ["input-bound", "warming-up", "input-bound"]


def test_a_job_that_never_printed_its_result_keeps_every_window_after_the_first_verdict() -> None:
    polls = [_poll(1.0, "warming-up"), _poll(3.0, "compute-bound"), _poll(5.0, "warming-up")]
    scorer.mark_attach_stepping(polls, loop_end_s=None)
    assert [p.stepping for p in polls] == [False, True, True]


def test_result_watch_sees_the_result_line_when_the_job_prints_it(tmp_path: Path) -> None:
    out = tmp_path / "stdout.txt"
    child = (
        "import time\n"
        "print('loading', flush=True)\n"
        "time.sleep(0.3)\n"
        "print(f'result scenario=x printed={time.monotonic()}', flush=True)\n"
        "time.sleep(0.5)\n"
    )
    with open(out, "wb") as handle:
        proc = subprocess.Popen([sys.executable, "-c", child], stdout=handle)
    watch = scorer.ResultWatch(out, proc)
    watch.start()
    proc.wait(timeout=30)
    exited = time.monotonic()
    watch.join(timeout=10)
    printed = float(out.read_text().split("printed=")[1])
    assert watch.seen_mono is not None
    assert printed <= watch.seen_mono < exited


def test_result_watch_gives_up_when_the_job_exits_without_a_result(tmp_path: Path) -> None:
    out = tmp_path / "stdout.txt"
    with open(out, "wb") as handle:
        proc = subprocess.Popen([sys.executable, "-c", "print('skipped: no torch')"], stdout=handle)
    watch = scorer.ResultWatch(out, proc)
    watch.start()
    proc.wait(timeout=30)
    watch.join(timeout=10)
    assert not watch.is_alive()
    assert watch.seen_mono is None
