"""Host sampler: CPU, load, memory and swap, plus the processes the app watches and their workers.

CPU percentages are deltas of cumulative CPU times between two samples, computed here rather than
with psutil's stateful ``cpu_percent()`` so that two HostSources never disturb each other. A process
seen for the first time has ``cpu_percent`` None: there is no interval yet.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from xfertop.model.host import HostState, ProcessStats
from xfertop.sources.base import PollingSource
from xfertop.sources.proc_memory import StatusMemory, parse_status
from xfertop.sources.proc_placement import children_by_parent

#: Depth and breadth bounds on the worker tree, so a fork bomb cannot stall the sampler.
MAX_CHILD_DEPTH = 4
MAX_CHILDREN_PER_PROCESS = 256


@dataclass(frozen=True)
class _CpuMark:
    busy_s: float
    total_s: float


def _cpu_mark(times: Any) -> _CpuMark:
    fields = times._asdict()
    # On Linux guest time is already counted in user time (psutil does the same subtraction).
    total = sum(fields.values()) - fields.get("guest", 0.0) - fields.get("guest_nice", 0.0)
    idle = fields.get("idle", 0.0) + fields.get("iowait", 0.0)
    return _CpuMark(busy_s=total - idle, total_s=total)


def _busy_percent(before: _CpuMark, after: _CpuMark) -> float:
    total = after.total_s - before.total_s
    if total <= 0:
        return 0.0
    return max(0.0, min(100.0, 100.0 * (after.busy_s - before.busy_s) / total))


class HostSource(PollingSource[HostState]):
    """Samples the host every ``interval_s``; ``watch_pids`` says which processes to detail."""

    name = "host"

    def __init__(self, interval_s: float = 1.0, proc_root: Path = Path("/proc")) -> None:
        super().__init__(interval_s)
        self._proc_root = proc_root
        self._hostname = socket.gethostname()
        self._watched: frozenset[int] = frozenset()
        self._watched_lock = threading.Lock()
        self._cpu_total = _cpu_mark(psutil.cpu_times())
        self._cpu_cores = [_cpu_mark(t) for t in psutil.cpu_times(percpu=True)]
        #: (pid, create_time) -> (cpu seconds, monotonic seconds) at the previous sample.
        self._process_marks: dict[tuple[int, float], tuple[float, float]] = {}

    def watch_pids(self, pids: Iterable[int]) -> None:
        """Replace the set of processes to detail (GPU processes, training ranks). Thread-safe."""
        with self._watched_lock:
            self._watched = frozenset(pids)

    def sample(self) -> HostState:
        total = _cpu_mark(psutil.cpu_times())
        cores = [_cpu_mark(t) for t in psutil.cpu_times(percpu=True)]
        cpu_percent = _busy_percent(self._cpu_total, total)
        per_core = tuple(_busy_percent(b, a) for b, a in zip(self._cpu_cores, cores, strict=False))
        self._cpu_total, self._cpu_cores = total, cores
        memory = psutil.virtual_memory()
        swap = psutil.swap_memory()
        with self._watched_lock:
            watched = sorted(self._watched)
        now = time.monotonic()
        seen: set[tuple[int, float]] = set()
        # One pass over /proc/*/stat per sample, rather than psutil's children() scan per process.
        tree = children_by_parent(self._proc_root) if watched else {}
        processes = tuple(self._process(pid, now, seen, tree, depth=0) for pid in watched)
        self._process_marks = {key: mark for key, mark in self._process_marks.items() if key in seen}
        return HostState(
            timestamp=time.time(),
            hostname=self._hostname,
            cpu_percent=cpu_percent,
            cpu_per_core_percent=per_core,
            load_avg=os.getloadavg(),
            mem_total_bytes=memory.total,
            mem_used_bytes=memory.total - memory.available,
            mem_available_bytes=memory.available,
            swap_total_bytes=swap.total,
            swap_used_bytes=swap.used,
            processes=processes,
        )

    def _process(self, pid: int, now: float, seen: set[tuple[int, float]], tree: dict[int, list[int]],
                 depth: int) -> ProcessStats:
        try:
            process = psutil.Process(pid)
            with process.oneshot():
                key = (pid, process.create_time())
                seen.add(key)
                times = process.cpu_times()
                cpu_s = times.user + times.system
                name = process.name()
                ppid = process.ppid()
                user = _username(process)
                rss, threads = _rss_and_threads(process)
        except psutil.NoSuchProcess:
            return _missing(pid, f"process {pid} has exited")
        except psutil.AccessDenied:
            return _missing(pid, f"access denied to process {pid}: it belongs to another user; "
                                 "run xfertop as that user (or root) to see it")
        cpu_percent = self._cpu_percent(key, cpu_s, now)
        memory, memory_error = self._status_memory(pid)
        children = tree.get(pid, [])[:MAX_CHILDREN_PER_PROCESS] if depth < MAX_CHILD_DEPTH else []
        kids = tuple(self._process(child, now, seen, tree, depth + 1) for child in children)
        return ProcessStats(
            pid=pid,
            name=name,
            user=user,
            cpu_percent=cpu_percent,
            rss_bytes=rss,
            num_threads=threads,
            # Not measurable per process from /proc: see ProcessStats.pinned_bytes.
            pinned_bytes=None,
            children=kids,
            error=memory_error,
            locked_bytes=memory.locked_bytes if memory else None,
            pinned_vm_bytes=memory.pinned_vm_bytes if memory else None,
            shmem_rss_bytes=memory.shmem_rss_bytes if memory else None,
            ppid=ppid,
        )

    def _cpu_percent(self, key: tuple[int, float], cpu_s: float, now: float) -> float | None:
        previous = self._process_marks.get(key)
        self._process_marks[key] = (cpu_s, now)
        if previous is None or now <= previous[1]:
            return None
        return max(0.0, 100.0 * (cpu_s - previous[0]) / (now - previous[1]))

    def _status_memory(self, pid: int) -> tuple[StatusMemory | None, str | None]:
        """Locked, pinned and shared bytes from /proc/<pid>/status (world-readable), or why not."""
        try:
            return parse_status((self._proc_root / str(pid) / "status").read_text()), None
        except FileNotFoundError:
            return None, f"process {pid} exited while being read"
        except PermissionError:
            return None, f"cannot read /proc/{pid}/status (permission denied): locked memory unknown"
        except OSError as exc:
            return None, f"cannot read /proc/{pid}/status: {exc.strerror or exc}"


def _username(process: psutil.Process) -> str | None:
    try:
        return process.username()
    except (psutil.AccessDenied, KeyError):
        return None


def _rss_and_threads(process: psutil.Process) -> tuple[int | None, int | None]:
    try:
        return process.memory_info().rss, process.num_threads()
    except psutil.AccessDenied:
        return None, None


def _missing(pid: int, error: str) -> ProcessStats:
    return ProcessStats(pid=pid, name="?", user=None, cpu_percent=None, rss_bytes=None, num_threads=None,
                        pinned_bytes=None, error=error)
