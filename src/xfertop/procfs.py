"""The one reading of /proc/<pid>/stat: "pid (comm) state ppid ...", where comm (field 2) may hold
spaces and parentheses, so fields 3 on are what follows the LAST ')'; and of /proc/<pid>/schedstat's
run delay.

Standard library only and no xfertop import: the reporter (through ``wire``) and every source use it.
Each user keeps its own rule for what it needs of the fields (how many, which may be missing).
"""

from __future__ import annotations

from typing import AnyStr


def split_stat(data: AnyStr) -> tuple[AnyStr, AnyStr | None, AnyStr] | None:
    """/proc/<pid>/stat (bytes or str) cut at its last ')': ``(before, comm, after)``.

    ``before`` is everything ahead of that ')' (pid, '(' and name); ``comm`` the name, from the first
    '(' to the last ')', None where no '(' comes before it; ``after`` everything that follows the ')'
    (" state ppid ...": ``after.split()`` gives field 3 on). None where there is no ')' at all.
    """
    if isinstance(data, bytes):
        close = data.rfind(b")")
        open_ = data.find(b"(", 0, close)
    else:
        close = data.rfind(")")
        open_ = data.find("(", 0, close)
    if close < 0:
        return None
    comm = data[open_ + 1 : close] if open_ >= 0 else None
    return data[:close], comm, data[close + 1 :]


def run_delay_ns(schedstat: bytes) -> int | None:
    """/proc/<pid>/schedstat ("<ns on a CPU> <ns runnable, waiting for a CPU> <timeslices>", of the thread
    whose id is pid): the ns it waited for a CPU while it could run; None where malformed. The file
    exists where the kernel has CONFIG_SCHED_INFO (distribution kernels do). Read by the host source for
    DataLoader workers and by the reporter for the loop's thread (reporter/_ready_clock.py).

    None too for "0 0 0": a kernel that keeps no scheduler statistics (CONFIG_SCHEDSTATS off and delay
    accounting off) prints zeros, which would read as a thread that never waited for a CPU. A thread
    that has run at all has a timeslice counted where they are kept (a just-started one may still show
    0 ns on a CPU: "0 2788530 1")."""
    fields = schedstat.split()
    if len(fields) < 2 or not fields[1].isdigit():
        return None
    if fields[:3] == [b"0", b"0", b"0"]:
        return None
    return int(fields[1])
