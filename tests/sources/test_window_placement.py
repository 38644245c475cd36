"""The placement probe around a py-spy window, on real processes: descendants (under fork and under a
forkserver), their affinity and CPU, a root or a child that goes away mid-window."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from crowded_core import crowded_core, spun
from xfertop.sources.stacks.window_placement import PlacementProbe

# A parent that starts two children (one pinned to its first allowed core, one free), says so, and waits
# for stdin; "exit-child" on stdin makes the free child exit.
_FAMILY = r"""
import os, subprocess, sys
first = min(os.sched_getaffinity(0))
pinned = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
os.sched_setaffinity(pinned.pid, {first})
free = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
print(pinned.pid, free.pid, first, flush=True)
for line in sys.stdin:
    if line.strip() == "exit-child":
        free.stdin.close(); free.wait(); print("done", flush=True)
"""


@contextmanager
def family() -> Iterator[tuple[subprocess.Popen[str], int, int, int]]:
    parent = subprocess.Popen(
        [sys.executable, "-c", _FAMILY], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert parent.stdout is not None
        pinned, free, first = (int(x) for x in parent.stdout.readline().split())
        yield parent, pinned, free, first
    finally:
        parent.kill()
        parent.wait()


def test_children_their_affinity_and_the_cores_are_read_around_the_window() -> None:
    with family() as (parent, pinned, free, first):
        probe = PlacementProbe(parent.pid)
        probe.start()
        placement = probe.finish()
    assert placement is not None and placement.root_alive
    by_pid = {child.pid: child for child in placement.children}
    assert by_pid[pinned].allowed_cpus == (first,)
    assert by_pid[free].allowed_cpus == tuple(sorted(os.sched_getaffinity(0)))
    assert len(placement.cores_busy_percent) == os.cpu_count()
    assert placement.uses_cuda is False


def test_a_child_that_exits_mid_window_is_not_listed() -> None:
    with family() as (parent, pinned, _free, _):
        probe = PlacementProbe(parent.pid)
        probe.start()
        assert parent.stdin is not None and parent.stdout is not None
        parent.stdin.write("exit-child\n")
        parent.stdin.flush()
        assert parent.stdout.readline().strip() == "done"
        placement = probe.finish()
    assert placement is not None
    assert {child.pid for child in placement.children} == {pinned}


def test_a_root_that_exits_mid_window_is_said_to_be_gone() -> None:
    with family() as (parent, _, _, _):
        probe = PlacementProbe(parent.pid)
        probe.start()
        parent.kill()
        parent.wait()
        placement = probe.finish()
    assert placement is not None and not placement.root_alive and placement.children == ()


def test_a_launcher_whose_child_maps_the_gpu_is_a_cuda_job(monkeypatch) -> None:
    # /dev/nvidiactl is the hardware boundary (no GPU here): one child maps it, the launcher does not.
    from xfertop.sources.stacks import window_placement

    with family() as (parent, _pinned, free, _first):
        monkeypatch.setattr(window_placement, "_uses_cuda", lambda pid: pid == free)
        probe = PlacementProbe(parent.pid)
        probe.start()
        assert (placement := probe.finish()) is not None and placement.uses_cuda is True
        monkeypatch.setattr(window_placement, "_uses_cuda", lambda pid: None if pid == parent.pid else True)
        probe.start()
        assert (unread := probe.finish()) is not None and unread.uses_cuda is None  # the root's maps unread


def test_a_childs_time_waiting_for_a_core_is_read_around_the_window() -> None:
    # Attach's evidence as the host source's: workers that want a core other jobs hold are not asleep.
    with crowded_core() as crowd:
        probe = PlacementProbe(crowd.parent)
        probe.start()
        spun(crowd.spinners[0])
        placement = probe.finish()
    assert placement is not None
    kids = {child.pid: child for child in placement.children}
    for pid in crowd.spinners:
        cpu, delay = kids[pid].cpu_percent, kids[pid].run_delay_percent
        assert cpu is not None and delay is not None and cpu + delay >= 80.0 and delay >= 20.0, kids[pid]
    cpu, delay = kids[crowd.sleeper].cpu_percent, kids[crowd.sleeper].run_delay_percent
    assert cpu is not None and delay is not None and cpu + delay < 20.0, kids[crowd.sleeper]
