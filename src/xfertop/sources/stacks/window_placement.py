"""The attached process's descendants (its DataLoader workers) and the cores they may use, read around
one py-spy window: their CPU affinity, their CPU use over the window, and how busy every core was.

`xfertop run` gets the same evidence from the host source; `xfertop attach` has no host source, and its
advice on more workers must rest on it too: never "more workers" where those CPUs are saturated or
confined.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

import psutil

from xfertop.model.stacks import ChildPlacement, WindowPlacement
from xfertop.sources.host.cgroup_cpu import (
    CpuLimit,
    ThrottleCounters,
    read_cpu_limit,
    read_throttle_counters,
    shares_between,
)
from xfertop.sources.host.proc_memory import NVIDIA_CONTROL_DEVICE, maps_has_pathname
from xfertop.sources.host.proc_placement import parse_run_delay_s, read_proc_file

#: Children read per window at most (DataLoader workers are a handful; a process pool may be many).
MAX_CHILDREN = 256


class _Start(NamedTuple):
    at: float
    cores: list[Any] | None
    cpu_s: dict[int, tuple[psutil.Process, float]]
    #: pid -> seconds it waited for a CPU while ready to run, where schedstat could be read.
    run_delay_s: dict[int, float]
    limit: CpuLimit | None
    throttle: ThrottleCounters | None


def _cpu_s(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


def _run_delay_s(pid: int) -> float | None:
    try:
        return parse_run_delay_s(read_proc_file(f"/proc/{pid}/schedstat"))
    except OSError:
        return None


def _children(root: psutil.Process) -> list[psutil.Process]:
    """Every descendant: DataLoader workers are children of the training process under fork, and of
    its forkserver process under forkserver (Python 3.14's default on Linux)."""
    return root.children(recursive=True)[:MAX_CHILDREN]


def _cores() -> list[Any] | None:
    try:
        return list(psutil.cpu_times(percpu=True))
    except (OSError, RuntimeError):
        return None


def _busy_percent(before: Any, after: Any) -> float:
    """One core's busy percent between two psutil.cpu_times(percpu=True) readings."""
    total = sum(after) - sum(before)
    idle = (after.idle + getattr(after, "iowait", 0.0)) - (before.idle + getattr(before, "iowait", 0.0))
    return 0.0 if total <= 0 else max(0.0, min(100.0, 100.0 * (1 - idle / total)))


def _uses_cuda(pid: int) -> bool | None:
    """Whether the process maps the NVIDIA control device (0.5 ms for a torch process's maps)."""
    try:
        maps = read_proc_file(f"/proc/{pid}/maps").decode("utf-8", "surrogateescape")
    except OSError:
        return None
    return maps_has_pathname(maps, NVIDIA_CONTROL_DEVICE)


def _uses_cuda_here_or_under(pid: int, children: list[psutil.Process]) -> bool | None:
    """Whether the attached process, or else a process under it, is a CUDA process: a launcher
    (torch.multiprocessing.spawn, a wrapper script) whose child trains on the GPU. The children's maps
    are read only where the attached process's say it is not one."""
    here = _uses_cuda(pid)
    if here is False and any(_uses_cuda(child.pid) for child in children):
        return True
    return here


class PlacementProbe:
    """``start()`` before the window, ``finish()`` after it: the placement, or None if unreadable."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._start: _Start | None = None

    def start(self) -> None:
        cpu_s: dict[int, tuple[psutil.Process, float]] = {}
        run_delay_s: dict[int, float] = {}
        try:
            for child in _children(psutil.Process(self.pid)):
                try:
                    cpu_s[child.pid] = (child, _cpu_s(child))
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
                delay = _run_delay_s(child.pid)
                if delay is not None:
                    run_delay_s[child.pid] = delay
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
        limit = read_cpu_limit(self.pid)
        stat_file = limit.stat_file if limit is not None and limit.quota_cores is not None else None
        throttle = read_throttle_counters(stat_file) if stat_file else None
        self._start = _Start(time.monotonic(), _cores(), cpu_s, run_delay_s, limit, throttle)

    def finish(self) -> WindowPlacement | None:
        start = self._start
        if start is None:
            return None
        elapsed = time.monotonic() - start.at
        try:
            root = psutil.Process(self.pid)
            children = _children(root)
        except psutil.NoSuchProcess:
            return WindowPlacement(children=(), cores_busy_percent=(), root_alive=False)
        except psutil.AccessDenied:
            return None
        placed: list[ChildPlacement] = []
        for child in children:
            try:
                allowed = tuple(sorted(child.cpu_affinity() or ()))
                known = start.cpu_s.get(child.pid)
                percent = delay = None
                if known is not None and known[0].is_running() and elapsed > 0:
                    percent = 100.0 * (_cpu_s(child) - known[1]) / elapsed
                    delay_then, delay_now = start.run_delay_s.get(child.pid), _run_delay_s(child.pid)
                    if delay_then is not None and delay_now is not None:
                        delay = 100.0 * max(0.0, delay_now - delay_then) / elapsed
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            placed.append(ChildPlacement(child.pid, allowed, percent, delay))
        cores_now = _cores()
        busy: tuple[float, ...] = ()
        if start.cores is not None and cores_now is not None and len(cores_now) == len(start.cores):
            busy = tuple(_busy_percent(b, a) for b, a in zip(start.cores, cores_now, strict=True))
        limit, share, used = start.limit, None, None
        if start.throttle is not None and limit is not None and limit.stat_file:
            after = read_throttle_counters(limit.stat_file)
            if after is not None:
                share, used = shares_between(start.throttle, after, elapsed, limit.quota_cores)
        return WindowPlacement(
            children=tuple(placed),
            cores_busy_percent=busy,
            root_alive=True,
            cpu_quota_cores=limit.quota_cores if limit is not None else None,
            cpu_quota_file=limit.quota_file if limit is not None else None,
            cpu_throttled_share=share,
            cpu_quota_used_share=used,
            uses_cuda=_uses_cuda_here_or_under(self.pid, children),
        )
