"""The end-of-run summary's follower on a real ring: what it says of a job it last read warming up."""

from __future__ import annotations

import os
import time
from pathlib import Path

from ring_test_tools import wait_until, write_step
from xfertop import wire
from xfertop.launch.summary import RunFollower
from xfertop.reporter._identity import current_identity
from xfertop.reporter._ring_writer import RingWriter

STEP_NS = 10_000_000


def test_a_job_that_ends_after_a_warming_up_read_gets_the_verdict_of_its_ring(tmp_path: Path) -> None:
    """The follower reads every few seconds; a short job may end between a read that found it warming
    up and the next. On the H200 a 28-step job's summary read "warming-up: 2 of the 5 steps a first
    verdict needs" while the live view said input-bound. Its ring holds a whole window: that is judged."""
    token = "follower-test"
    writer = RingWriter(str(tmp_path), current_identity(environ={**os.environ, wire.LAUNCH_TOKEN_ENV: token}))
    start = time.perf_counter_ns() - 50 * STEP_NS

    def steps(first: int, last: int) -> None:  # 10 ms steps, 8 ms of them in next(): input-bound
        for step in range(first, last):
            write_step(writer, step, start + step * STEP_NS, STEP_NS, data_wait_ns=8_000_000, samples=32)

    steps(0, 3)
    follower = RunFollower(token, interval_s=3600, ring_dir=str(tmp_path))
    follower.start()
    try:
        wait_until(lambda: follower.spans or None, 30, "the follower's first read")
        assert follower.spans[-1].kind == "warming-up"
        steps(3, 45)
        writer.close()
    finally:
        follower.finish()
    assert follower.last_verdict is not None
    assert follower.last_verdict["kind"] == "input-bound", follower.last_verdict["headline"]
    assert follower.spans[-1].kind == "input-bound"
