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


def test_two_threads_reading_at_once_keep_the_clock_and_leave_one_file_open() -> None:
    # A prefetch thread's loader read and the main thread's model hooks may read the clock together: one
    # thread's reopening must not close the file under the other's read (which read EBADF and turned the
    # clock off for the rest of the run) nor leave files behind. A read that finds the other thread's
    # under way is skipped (-1, that sample dropped) rather than waited for.
    clock = ReadyClock()
    files_before = len(os.listdir("/proc/self/fd"))
    read = []
    start = threading.Barrier(2)

    def read_many() -> None:
        start.wait()
        values = [clock.ready_ns() for _ in range(3000)]
        read.append(sum(value > 0 for value in values))

    threads = [threading.Thread(target=read_many) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(read) > 0, read
    # Still on, on this thread and on another (the race turned it off for good before).
    assert clock.ready_ns() > 0
    other = threading.Thread(target=lambda: read.append(clock.ready_ns()))
    other.start()
    other.join()
    assert read[-1] > 0
    assert len(os.listdir("/proc/self/fd")) <= files_before + 1
    clock.close()
    assert len(os.listdir("/proc/self/fd")) == files_before


def test_a_child_forked_while_another_thread_read_the_clock_reads_it() -> None:
    # A thread of the job's held the clock's lock for a read at the moment another forked: the child
    # has no such thread to release it, and must neither hang nor lose its clock.
    clock = ReadyClock()
    assert clock.ready_ns() > 0
    clock._lock.acquire()  # the other thread, mid-read
    try:
        pid = os.fork()
        if pid == 0:
            os._exit(0 if clock.ready_ns() > 0 and clock.ready_ns() > 0 else 1)
    finally:
        clock._lock.release()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


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
