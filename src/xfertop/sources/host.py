"""Host sampler: CPU, load, memory and swap, plus the processes the app watches and their workers.

CPU percentages are deltas of cumulative CPU times between two samples, computed here rather than
with psutil's stateful ``cpu_percent()`` so that two HostSources never disturb each other. A process
seen for the first time has ``cpu_percent`` None: there is no interval yet.

For each watched process that maps /dev/nvidiactl it also reads its cudaHostAlloc pinned memory from
/proc/<pid>/smaps (``cuda_host_alloc_bytes``). smaps makes the kernel walk the page tables (6-24 ms
for a torch process on the H200), so each process's figure is re-read at most every
``SMAPS_INTERVAL_S`` and at most ``MAX_SMAPS_READS_PER_SAMPLE`` smaps are read per sample, the oldest
figures first; in between the last figure is published with its age.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import psutil

from xfertop.model.host import HostState, ProcessStats
from xfertop.sources.base import PollingSource
from xfertop.sources.proc_memory import (
    NVIDIA_CONTROL_DEVICE,
    StatusMemory,
    cuda_host_alloc_bytes,
    maps_has_pathname,
    parse_status,
)
from xfertop.sources.proc_placement import children_by_parent

#: Depth and breadth bounds on the worker tree, so a fork bomb cannot stall the sampler.
MAX_CHILD_DEPTH = 4
MAX_CHILDREN_PER_PROCESS = 256
#: A process's cuda_host_alloc_bytes is re-read from smaps at most this often.
SMAPS_INTERVAL_S = 5.0
#: At most this many smaps files are read per sample: 4 x 24 ms (the slowest read measured for a torch
#: process on the H200) keeps the worst case near 0.1 s per sample. At a 1 s interval that keeps 20
#: CUDA processes within 5 s of fresh; with more, figures age further (published with their age).
MAX_SMAPS_READS_PER_SAMPLE = 4

#: (pid, create_time): a reused pid is another process.
_Key = tuple[int, float]


@dataclass(frozen=True)
class _HostAllocReading:
    """The last look at one process's cudaHostAlloc memory."""

    #: None: not a CUDA process (no /dev/nvidiactl mapping), or maps/smaps unreadable (see error).
    value: int | None
    #: time.monotonic() of the read.
    read_at: float
    error: str | None = None


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

    def __init__(self, interval_s: float = 1.0, proc_root: Path = Path("/proc"),
                 smaps_interval_s: float = SMAPS_INTERVAL_S,
                 max_smaps_reads: int = MAX_SMAPS_READS_PER_SAMPLE,
                 nvidia_control_device: str = NVIDIA_CONTROL_DEVICE) -> None:
        """``nvidia_control_device``: the mapping that marks a CUDA process; tests without a GPU pass a
        stand-in file that their process maps."""
        super().__init__(interval_s)
        self._proc_root = proc_root
        self._smaps_interval_s = smaps_interval_s
        self._max_smaps_reads = max_smaps_reads
        self._nvidia_control_device = nvidia_control_device
        self._host_alloc: dict[_Key, _HostAllocReading] = {}
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
        keys: dict[int, _Key] = {}
        processes = tuple(self._process(pid, now, seen, tree, 0, keys) for pid in watched)
        top_keys = {p.pid: keys[p.pid] for p in processes if p.pid in keys}
        processes = self._with_cuda_host_alloc(processes, top_keys, now)
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
                 depth: int, keys: dict[int, _Key]) -> ProcessStats:
        try:
            process = psutil.Process(pid)
            with process.oneshot():
                key = (pid, process.create_time())
                seen.add(key)
                keys[pid] = key
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
        kids = tuple(self._process(child, now, seen, tree, depth + 1, keys) for child in children)
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

    def _with_cuda_host_alloc(self, processes: tuple[ProcessStats, ...], keys: dict[int, _Key],
                              now: float) -> tuple[ProcessStats, ...]:
        """Add each watched process's cudaHostAlloc figure: re-read where older than the smaps interval,
        oldest first, at most ``max_smaps_reads`` smaps per sample; the rest keep their last reading."""
        readings = {key: self._host_alloc[key] for key in keys.values() if key in self._host_alloc}
        due = [key for key in keys.values()
               if key not in readings or now - readings[key].read_at >= self._smaps_interval_s]
        due.sort(key=lambda key: readings[key].read_at if key in readings else float("-inf"))
        smaps_reads = 0
        for key in due:
            if smaps_reads >= self._max_smaps_reads:
                break
            reading, read_smaps = self._read_host_alloc(key[0], now)
            smaps_reads += read_smaps
            if reading is not None:
                readings[key] = reading
        self._host_alloc = readings
        result = []
        for stats in processes:
            reading = readings.get(keys[stats.pid]) if stats.pid in keys else None
            if reading is None:
                result.append(stats)
                continue
            error = stats.error
            if reading.error:
                error = reading.error if error is None else f"{error}; {reading.error}"
            result.append(replace(
                stats, cuda_host_alloc_bytes=reading.value, error=error,
                cuda_host_alloc_age_s=None if reading.value is None else max(0.0, now - reading.read_at)))
        return tuple(result)

    def _read_host_alloc(self, pid: int, now: float) -> tuple[_HostAllocReading | None, bool]:
        """(reading, whether smaps was read). No reading when the process exited meanwhile."""
        directory = self._proc_root / str(pid)
        try:
            maps = (directory / "maps").read_text()
            if not maps_has_pathname(maps, self._nvidia_control_device):
                return _HostAllocReading(value=None, read_at=now), False
            smaps = (directory / "smaps").read_text()
        except (FileNotFoundError, ProcessLookupError):
            return None, False
        except PermissionError:
            return _HostAllocReading(value=None, read_at=now, error=(
                f"cannot read the memory maps of process {pid} (permission denied): its CUDA pinned memory "
                "is unknown; run xfertop as its user (or root) to see it")), False
        except OSError as exc:
            return _HostAllocReading(value=None, read_at=now, error=(
                f"cannot read the memory maps of process {pid}: {exc.strerror or exc}")), False
        return _HostAllocReading(value=cuda_host_alloc_bytes(smaps), read_at=now), True

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
