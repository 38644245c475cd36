"""The loop thread's ready time (on a CPU, or waiting for one) on the real scheduler: what tells the loop's
own work that computes from work that waits, blocked (reporter/_ready_clock.py)."""

from __future__ import annotations

import os
import threading
import time

import pytest

from xfertop.reporter._ready_clock import MIN_SAMPLED_NS, BlockedShares, ReadyClock

#: The clock reads schedstat: a kernel without CONFIG_SCHED_INFO has none (the clock then says -1).
pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/schedstat"), reason="no schedstat here")


def _ready_over(clock: ReadyClock, work) -> tuple[int, int]:
    began_ns, ready = time.perf_counter_ns(), clock.ready_ns()
    work()
    return time.perf_counter_ns() - began_ns, clock.ready_ns() - ready


def _spin(seconds: float = 0.05) -> None:
    began = time.perf_counter()
    while time.perf_counter() - began < seconds:
        pass


def test_work_that_computes_is_ready_and_a_wait_is_not() -> None:
    clock = ReadyClock()
    wall, ready = _ready_over(clock, _spin)
    assert ready >= 0.8 * wall, (wall, ready)  # on a CPU, or waiting for one on a busy machine
    wall, ready = _ready_over(clock, lambda: threading.Event().wait(0.05))
    assert ready <= 0.2 * wall, (wall, ready)


def test_reads_on_another_thread_are_told_apart() -> None:
    # A loader read on a prefetch thread opens the step there; the model's hooks run on the main thread.
    clock = ReadyClock()
    clock.ready_ns()
    first = clock.thread_reads
    other = threading.Thread(target=clock.ready_ns)
    other.start()
    other.join()
    assert clock.thread_reads != first
    assert clock.ready_ns() > 0 and clock.thread_reads != first


def test_two_threads_reading_at_once_both_read_and_leave_one_file_open() -> None:
    # A prefetch thread's loader read and the main thread's model hooks may read the clock together: one
    # thread's reopening must not close the file under the other's read (which read EBADF and turned the
    # clock off for the rest of the run) nor leave files behind.
    clock = ReadyClock()
    files_before = len(os.listdir("/proc/self/fd"))
    failed = []
    start = threading.Barrier(2)

    def read_many() -> None:
        start.wait()
        failed.extend(value for value in (clock.ready_ns() for _ in range(3000)) if value < 0)

    threads = [threading.Thread(target=read_many) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failed and clock.ready_ns() > 0
    assert len(os.listdir("/proc/self/fd")) <= files_before + 1
    clock.close()
    assert len(os.listdir("/proc/self/fd")) == files_before


def test_the_shares_follow_what_the_loop_does_now() -> None:
    shares = BlockedShares()
    assert shares.permilles() == (None, None)  # nothing sampled yet: the ring says nothing
    for _ in range(100):  # 1 s of blocked work before the model, sampled 10 ms at a time
        shares.add(10_000_000, 0, after_step=False)
    assert shares.permilles()[0] == 1000
    for _ in range(100):  # then 1 s of work that computes
        shares.add(10_000_000, 10_000_000, after_step=False)
    assert shares.permilles()[0] < 100
    shares.add(MIN_SAMPLED_NS - 1, 0, after_step=True)
    assert shares.permilles()[1] is None  # too little of it sampled
