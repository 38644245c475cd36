"""Whether the loop's own work runs or waits: on sampled steps, the loop thread's time ready to run (on a
CPU, or waiting for one) from its scheduler statistics, against the wall time of the loop's own work
before the model and after the step.

The step clock books the host time between the batch's arrival and the model's first call as the loop's
own work, and the time after the step's last backward or optimizer step as the loop's own too. Both may
be work (augmenting a batch, computing metrics) or a wait (a queue's get() for batches a producer thread
makes, a sleep, an fsync): on the host's clock they look alike, and CPU time alone would also count time
a thread waited for a busy core as a wait. The thread's CPU clock and its run delay (ready, but no CPU
for it: ``/proc/self/task/<tid>/schedstat``) are the time it was ready; the rest of the wall it was
blocked.

Read on one step each ``SAMPLE_NS`` at most: four reads on a sampled step, 5.3 us each on the 2-core CPU
VM (os.pread of schedstat, and the thread's CPU clock at 1.3 us): about 21 us ten times a second, 0.02% of
a core, and on one step in many of a job of thousands of steps a second. The figures go to the ring's
header after each sampled step (wire.H_LOOP_PRE_BLOCKED, H_LOOP_POST_BLOCKED).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import weakref

from xfertop.procfs import run_delay_ns

#: The least time between two sampled steps.
SAMPLE_NS = 100_000_000
#: The least sampled wall time of a part for its blocked share to be written.
MIN_SAMPLED_NS = 2_000_000
#: Past this much sampled wall time of a part, its sums are halved: the share follows what the loop does
#: now (a few seconds of sampled steps), not its whole run.
HALVE_AFTER_NS = 500_000_000


class ReadyClock:
    """The calling thread's ready time (ns on a CPU plus ns waiting for one), -1 where not readable.

    Any thread may call it (a loader read on a prefetch thread while the model's hooks run on the main
    one): the open file is one, and os.open, pread and close release the GIL, so a lock keeps one thread
    from closing or replacing the file another is reading (which read EBADF, and could have closed a file
    of the job's that took its number). Held for one pread, on sampled steps only, and never waited for:
    a read that finds it held is no read (-1: that sample is dropped), so the job's threads never queue
    on it. A process forked while another thread held it gets it free again (_forget_in_child).
    """

    def __init__(self) -> None:
        self._fd = -1
        self._tid = 0
        self._unreadable = False
        self._lock = threading.Lock()
        _clocks.add(self)
        #: Counts the threads read: a sample whose reads were not all of one thread (a loader read on a
        #: prefetch thread while the model runs on the main one) is no sample (StepClock._sampled).
        self.thread_reads = 0

    def ready_ns(self) -> int:
        if not self._lock.acquire(blocking=False):
            return -1
        try:
            if self._unreadable:
                return -1
            tid = threading.get_native_id()
            if tid != self._tid and not self._open(tid):  # another thread, or a forked child: its file
                return -1
            try:
                # The file's CPU time (its first field) is the scheduler's last update, up to a tick old
                # for a running thread (it read spinning work as 20% blocked); the thread's CPU clock is
                # exact. Its run delay (the second) is complete while the thread runs: added when it got
                # its CPU.
                data = os.pread(self._fd, 128, 0)
            except OSError:  # this read only: the file is opened again at the next
                self._close()
                return -1
            waiting = run_delay_ns(data)
            if waiting is None:  # malformed, or a kernel that keeps no run delay ("0 0 0"): never again
                self._close()
                self._unreadable = True
                return -1
            return time.thread_time_ns() + waiting
        finally:
            self._lock.release()

    def _open(self, tid: int) -> bool:
        self._close()
        self._tid = tid
        self.thread_reads += 1
        try:
            self._fd = os.open(f"/proc/self/task/{tid}/schedstat", os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:  # no schedstat (a kernel without CONFIG_SCHED_INFO): never again
            self._unreadable = True
            return False
        except OSError:  # out of files, say: this read only
            self._tid = 0
            return False
        return True

    def close(self) -> None:
        with self._lock:
            self._close()

    def _forget_in_child(self) -> None:
        """In a forked child: a lock another thread held at the fork stays held there for good (that thread
        is not in the child); the file is the parent's thread's, and the child's thread has its own."""
        self._lock = threading.Lock()
        self._tid = 0

    def _close(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1
            self._tid = 0


#: Every clock of the process, for the fork handler (weakly: a clock goes with its step clock).
_clocks: weakref.WeakSet[ReadyClock] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for clock in list(_clocks):
        clock._forget_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)


class BlockedShares:
    """The sampled parts' wall and blocked time, recent ones weighing most, and the shares the ring says."""

    def __init__(self) -> None:
        self.pre_wall_ns = self.pre_blocked_ns = 0
        self.post_wall_ns = self.post_blocked_ns = 0

    def add(self, wall_ns: int, ready_ns: int, after_step: bool) -> None:
        """A sampled part: ``wall_ns`` of the loop's own work, ``ready_ns`` of it ready to run."""
        if wall_ns <= 0 or ready_ns < 0:
            return
        blocked = max(0, wall_ns - ready_ns)
        if after_step:
            self.post_wall_ns, self.post_blocked_ns = _halved(
                self.post_wall_ns + wall_ns, self.post_blocked_ns + blocked
            )
        else:
            self.pre_wall_ns, self.pre_blocked_ns = _halved(
                self.pre_wall_ns + wall_ns, self.pre_blocked_ns + blocked
            )

    def permilles(self) -> tuple[int | None, int | None]:
        """(before the model, after the step) blocked permille of their sampled wall; None where too little
        was sampled yet (the ring keeps what it said)."""
        return _permille(self.pre_blocked_ns, self.pre_wall_ns), _permille(
            self.post_blocked_ns, self.post_wall_ns
        )


def _halved(wall_ns: int, blocked_ns: int) -> tuple[int, int]:
    return (wall_ns // 2, blocked_ns // 2) if wall_ns > HALVE_AFTER_NS else (wall_ns, blocked_ns)


def _permille(blocked_ns: int, wall_ns: int) -> int | None:
    if wall_ns < MIN_SAMPLED_NS:
        return None
    return min(1000, round(1000 * blocked_ns / wall_ns))
