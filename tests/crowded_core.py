"""Real processes that crowd one core: children spinning on it (two by default) and one asleep in a
read, under a parent that waits. The CPU a child uses does not tell one that waits for the core from one
that sleeps; its time waiting for a CPU (the scheduler's run delay) does."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

import psutil

# Prints the spinners' pids and the sleeper's once all run (the spinners on its first allowed core, the
# core the tests' own jobs pin their workers to), then waits for stdin. argv[1]: how many spinners.
_CROWDED = r"""
import os, subprocess, sys
core = min(os.sched_getaffinity(0))
spin = "import os, sys; os.sched_setaffinity(0, {%d}); print(flush=True)\nwhile True: pass" % core
sleep = "import sys; print(flush=True); sys.stdin.read()"
kids = [subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        for code in [spin] * int(sys.argv[1]) + [sleep]]
for kid in kids:
    kid.stdout.readline()
print(*(kid.pid for kid in kids), flush=True)
sys.stdin.read()
"""


class Crowd(NamedTuple):
    parent: int
    spinners: tuple[int, ...]
    sleeper: int


@contextmanager
def crowded_core(spinners: int = 2) -> Iterator[Crowd]:
    parent = subprocess.Popen(
        [sys.executable, "-c", _CROWDED, str(spinners)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert parent.stdout is not None
        *spinning, sleeper = (int(pid) for pid in parent.stdout.readline().split())
        yield Crowd(parent.pid, tuple(spinning), sleeper)
    finally:
        try:
            kids = psutil.Process(parent.pid).children()
        except psutil.NoSuchProcess:
            kids = []
        for kid in kids:  # the spinners would spin on without their parent
            kid.kill()
        parent.kill()
        parent.wait(timeout=30)
        psutil.wait_procs(kids, timeout=30)


def spun(pid: int, cpu_s: float = 0.3) -> None:
    """Returns once ``pid`` has used ``cpu_s`` more seconds of CPU: an interval that has something to
    measure, however loaded the machine."""
    process = psutil.Process(pid)
    start = sum(process.cpu_times()[:2])
    while sum(process.cpu_times()[:2]) - start < cpu_s:
        psutil.wait_procs([process], timeout=0.02)
