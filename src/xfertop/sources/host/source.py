"""Host sampler: CPU, load, memory and swap, plus the processes the app watches and their workers.

CPU percentages are deltas of cumulative CPU times between two samples, computed here rather than
with psutil's stateful ``cpu_percent()`` so that two HostSources never disturb each other. A process
seen for the first time has ``cpu_percent`` None: there is no interval yet.

For each watched process that maps /dev/nvidiactl it also reads its cudaHostAlloc pinned memory from
/proc/<pid>/smaps (``cuda_host_alloc_bytes``). smaps makes the kernel walk the page tables (6-24 ms
for a torch process on the H200: 0.1-0.5% of a core at one read per 5 s), so each process's figure is
re-read at most every ``SMAPS_INTERVAL_S``, and then only if its ``RssShmem`` (from status, read every
sample) moved since the last read: cudaHostAlloc buffers are shmem, so a change in them moves RssShmem by
the same amount (measured, docs/host-memory.md). Unmoved, the figure is re-read after
``SMAPS_MAX_AGE_S`` all the same (RssShmem is a kernel estimate that may lag a small change). At most
``MAX_SMAPS_READS_PER_SAMPLE`` smaps are read per sample, the oldest figures first; in between the last
figure is published with its age. A process whose other shared memory keeps moving (DataLoader workers
hand batches over in /dev/shm) moves RssShmem at every sample while its pinned memory stays: each read
that finds the figure unchanged doubles the wait before the next (5, 10, 20 s, then every
``SMAPS_MAX_AGE_S``), and a changed figure brings it back to ``SMAPS_INTERVAL_S``. Read every 5 s, the
CUDA demo job's smaps took 0.7 of the view's 10.6 ms of CPU a second on an H100 (docs/ui.md).

Each watched process also gets its cgroup's CPU quota and throttled share (sources/host/cgroup_cpu.py): its
cgroup and the quota files up its path are read every QUOTA_REFRESH_S, and on each sample only the
cpu.stat of the cgroup whose quota binds it, and nothing for a process without a quota.

Cost: a sample reads only the watched processes and their workers, each with os.read rather than
psutil objects (stat, status and statm: what psutil's oneshot read, one read() each: the kernel writes
those whole in one go), and finds workers from /proc/<pid>/task/*/children (ChildFinder) instead of
reading the stat of every process on the machine; a process's thread ids are listed again only when
its thread count changed or one of them is gone. A user name is looked up (psutil reads /etc/passwd
each time) once per uid every USER_NAME_REFRESH_S. CPU and memory totals take one read of /proc/stat
and one of /proc/meminfo. The figures are psutil's, computed the same way
(benchmarks/host_sample_cost.py sets a sample's cost beside another checkout's).
"""

from __future__ import annotations

import os
import pwd
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import psutil

from xfertop.model.host import HostState, ProcessStats
from xfertop.procfs import split_stat
from xfertop.sources.base import PollingSource
from xfertop.sources.host.cgroup_cpu import CgroupCpuReader
from xfertop.sources.host.proc_memory import (
    NVIDIA_CONTROL_DEVICE,
    cuda_host_alloc_bytes,
    maps_has_pathname,
    parse_status,
    parse_status_value,
)
from xfertop.sources.host.proc_placement import (
    MAX_THREADS_FOR_CHILDREN,
    ChildFinder,
    parse_run_delay_s,
    read_proc_file,
)
from xfertop.sources.topology.sysfs_pci import parse_cpulist

#: Depth and breadth bounds on the worker tree, so a fork bomb cannot stall the sampler.
MAX_CHILD_DEPTH = 4
MAX_CHILDREN_PER_PROCESS = 256
#: A process's cuda_host_alloc_bytes is re-read from smaps at most this often (when RssShmem moved).
SMAPS_INTERVAL_S = 5.0
#: ... and at least this often when its RssShmem did not move.
SMAPS_MAX_AGE_S = 30.0
#: At most this many smaps files are read per sample: 4 x 24 ms (the slowest read measured for a torch
#: process on the H200) keeps the worst case near 0.1 s per sample. At a 1 s interval that keeps 20
#: CUDA processes within 5 s of fresh; with more, figures age further (published with their age).
MAX_SMAPS_READS_PER_SAMPLE = 4
#: A uid's name is looked up again after this long (a renamed user shows within it).
USER_NAME_REFRESH_S = 60.0

#: (pid, start time in clock ticks since boot): a reused pid is another process.
_Key = tuple[int, int]

#: What psutil divides /proc tick counts by, and multiplies statm pages by.
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
#: The columns of the cpu lines of /proc/stat, as psutil names them (older kernels print fewer).
_CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice")
#: psutil's patterns for status (first match anywhere in the file).
_UIDS = re.compile(rb"Uid:\t(\d+)\t(\d+)\t(\d+)")
_THREADS = re.compile(rb"Threads:\t(\d+)")
_TGID = re.compile(rb"Tgid:\t(\d+)")
#: The kernel truncates comm to 15 characters; psutil then takes the name from the command line.
_COMM_LENGTH = 15


@dataclass(frozen=True)
class _HostAllocReading:
    """The last look at one process's cudaHostAlloc memory."""

    #: None: not a CUDA process (no /dev/nvidiactl mapping), or maps/smaps unreadable (see error).
    value: int | None
    #: The source's monotonic clock at the read.
    read_at: float
    error: str | None = None
    #: The process's RssShmem when smaps was read: while it stays, the figure stays.
    shmem_rss_bytes: int | None = None
    #: Reads since the figure last changed that were made for a move of RssShmem and found the figure as
    #: it was: each doubles the wait before the next.
    same_reads: int = 0


@dataclass(frozen=True)
class _CpuMark:
    busy_s: float
    total_s: float


def _cpu_mark(fields: Mapping[str, float]) -> _CpuMark:
    """From the seconds per column of one cpu line, in /proc/stat's order (psutil's cpu_times()._asdict())."""
    # On Linux guest time is already counted in user time (psutil does the same subtraction).
    total = sum(fields.values()) - fields.get("guest", 0.0) - fields.get("guest_nice", 0.0)
    idle = fields.get("idle", 0.0) + fields.get("iowait", 0.0)
    return _CpuMark(busy_s=total - idle, total_s=total)


def _cpu_line_seconds(line: bytes) -> dict[str, float]:
    """One cpu line of /proc/stat in seconds per column, each converted as psutil.cpu_times() does."""
    columns = zip(_CPU_FIELDS, line.split()[1:], strict=False)
    return {name: float(ticks) / _CLOCK_TICKS for name, ticks in columns}


def _cpu_marks() -> tuple[_CpuMark, list[_CpuMark]]:
    """The machine's and each core's CPU times from one read of /proc/stat (psutil reads it twice for
    cpu_times() and cpu_times(percpu=True))."""
    lines = read_proc_file(f"{psutil.PROCFS_PATH}/stat").split(b"\n")
    total = _cpu_mark(_cpu_line_seconds(lines[0]))
    return total, [_cpu_mark(_cpu_line_seconds(line)) for line in lines[1:] if line.startswith(b"cpu")]


def _memory_totals() -> tuple[int, int, int, int]:
    """(total, available, swap total, swap used) bytes from one read of /proc/meminfo, as
    psutil.virtual_memory() and psutil.swap_memory() give them; where psutil would fall back to another
    computation (no MemAvailable line, a zero or out-of-range one, no swap lines) it is asked instead."""
    mems: dict[bytes, int] = {}
    for line in read_proc_file(f"{psutil.PROCFS_PATH}/meminfo").split(b"\n"):
        fields = line.split()
        if len(fields) >= 2:
            mems[fields[0]] = int(fields[1]) * 1024
    total, available = mems.get(b"MemTotal:"), mems.get(b"MemAvailable:")
    if total is None or available is None or not 0 < available <= total:
        memory = psutil.virtual_memory()
        total, available = memory.total, memory.available
    swap_total, swap_free = mems.get(b"SwapTotal:"), mems.get(b"SwapFree:")
    if swap_total is None or swap_free is None:
        swap = psutil.swap_memory()
        return total, available, swap.total, swap.used
    return total, available, swap_total, swap_total - swap_free


@dataclass(frozen=True)
class _Stat:
    """The fields of /proc/<pid>/stat the host source uses, as psutil parses them."""

    comm: bytes
    ppid: int
    cpu_s: float
    start_ticks: int
    #: Field 20 (num_threads): the count status prints as Threads (both get_nr_threads()).
    threads: int | None = None


def _parse_process_stat(data: bytes) -> _Stat | None:
    """psutil's reading of /proc/<pid>/stat: the name between the first '(' and the last ')'."""
    parts = split_stat(data)
    if parts is None:
        return None
    before, comm, after = parts
    fields = after[1:].split()  # past the space after ')' (one byte, whatever it is)
    if len(fields) < 20:
        return None
    if comm is None:  # no '(' before the last ')': psutil's name then runs from the start or is empty
        comm = b"" if b"(" in after else before
    try:
        cpu_s = float(fields[11]) / _CLOCK_TICKS + float(fields[12]) / _CLOCK_TICKS
        return _Stat(
            comm=comm,
            ppid=int(fields[1]),
            cpu_s=cpu_s,
            start_ticks=int(fields[19]),
            threads=int(fields[17]) if fields[17].isdigit() else None,
        )
    except ValueError:
        return None


def _read_whole_record(path: str) -> bytes:
    """A /proc file the kernel writes as one record (stat, status), in one read(): the record is made
    whole before any of it is copied, so a read shorter than the buffer has all of it; read_proc_file
    reads once more only to see the end."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        data = os.read(fd, _RECORD_BUFFER)
        if len(data) < _RECORD_BUFFER:
            return data
        chunks = [data]
        while chunk := os.read(fd, _RECORD_BUFFER):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


_RECORD_BUFFER = 1 << 16


class _UserNames:
    """psutil's Process.username() for a uid (the uid itself where it has no name), looked up once per
    USER_NAME_REFRESH_S: pwd.getpwuid reads /etc/passwd on every call."""

    def __init__(self) -> None:
        self._names: dict[int, tuple[str, float]] = {}

    def of_status(self, status: bytes, now: float) -> str | None:
        uids = _UIDS.search(status)
        if uids is None:
            return None
        uid = int(uids.group(1))
        known = self._names.get(uid)
        if known is not None and now - known[1] < USER_NAME_REFRESH_S:
            return known[0]
        try:
            name = pwd.getpwuid(uid).pw_name
        except KeyError:
            name = str(uid)
        self._names[uid] = (name, now)
        return name


def _children_of_threads(task_dir: str, tids: list[str]) -> list[int] | None:
    """The children listed in the children files of these threads (sorted); None where one cannot be
    read (a thread gone: its list is stale, list the threads again)."""
    children: set[int] = set()
    for tid in tids:
        try:
            data = read_proc_file(f"{task_dir}/{tid}/children")
            children.update(int(word) for word in data.split())
        except (OSError, ValueError):
            return None
    return sorted(children)


def _busy_percent(before: _CpuMark, after: _CpuMark) -> float:
    total = after.total_s - before.total_s
    if total <= 0:
        return 0.0
    return max(0.0, min(100.0, 100.0 * (after.busy_s - before.busy_s) / total))


class HostSource(PollingSource[HostState]):
    """Samples the host every ``interval_s``; ``watch_pids`` says which processes to detail."""

    name = "host"

    def __init__(
        self,
        interval_s: float = 1.0,
        proc_root: Path = Path("/proc"),
        smaps_interval_s: float = SMAPS_INTERVAL_S,
        max_smaps_reads: int = MAX_SMAPS_READS_PER_SAMPLE,
        nvidia_control_device: str = NVIDIA_CONTROL_DEVICE,
        smaps_max_age_s: float = SMAPS_MAX_AGE_S,
        monotonic: Callable[[], float] = time.monotonic,
        cgroup_cpu: CgroupCpuReader | None = None,
    ) -> None:
        """``nvidia_control_device``: the mapping that marks a CUDA process; tests without a GPU pass a
        stand-in file that their process maps. ``monotonic``: the clock of the smaps schedule, the CPU
        percentages and the cgroup readings. ``cgroup_cpu``: reads the watched processes' CPU quotas
        (one below ``proc_root`` and / by default)."""
        super().__init__(interval_s)
        self._proc_root = proc_root
        self._smaps_interval_s = smaps_interval_s
        self._smaps_max_age_s = smaps_max_age_s
        self._monotonic = monotonic
        self._max_smaps_reads = max_smaps_reads
        self._nvidia_control_device = nvidia_control_device
        self._host_alloc: dict[_Key, _HostAllocReading] = {}
        self._hostname = socket.gethostname()
        self._watched: frozenset[int] = frozenset()
        self._watched_lock = threading.Lock()
        self._cpu_total, self._cpu_cores = _cpu_marks()
        #: (pid, start ticks) -> (cpu seconds, monotonic seconds) at the previous sample.
        self._process_marks: dict[_Key, tuple[float, float]] = {}
        #: ... of the main threads of the watched processes (ProcessStats.main_thread_cpu_percent).
        self._main_thread_marks: dict[_Key, tuple[float, float]] = {}
        #: ... of the children's time waiting for a CPU (ProcessStats.run_delay_percent).
        self._run_delay_marks: dict[_Key, tuple[float, float]] = {}
        self._user_names = _UserNames()
        #: (pid, start ticks) -> (thread count, thread ids) when its children were last read.
        self._threads: dict[_Key, tuple[int, list[str]]] = {}
        self._cgroup_cpu = cgroup_cpu if cgroup_cpu is not None else CgroupCpuReader(proc_root=proc_root)

    def watch_pids(self, pids: Iterable[int]) -> None:
        """Replace the set of processes to detail (GPU processes, training ranks). Thread-safe."""
        with self._watched_lock:
            self._watched = frozenset(pids)

    def sample(self) -> HostState:
        total, cores = _cpu_marks()
        cpu_percent = _busy_percent(self._cpu_total, total)
        per_core = tuple(_busy_percent(b, a) for b, a in zip(self._cpu_cores, cores, strict=False))
        self._cpu_total, self._cpu_cores = total, cores
        mem_total, mem_available, swap_total, swap_used = _memory_totals()
        with self._watched_lock:
            watched = sorted(self._watched)
        now = self._monotonic()
        seen: set[_Key] = set()
        # Only the watched processes' children files, rather than every process's stat.
        finder = ChildFinder(self._proc_root)
        keys: dict[int, _Key] = {}
        processes = tuple(self._process(pid, now, seen, finder, 0, keys) for pid in watched)
        top_keys = {p.pid: keys[p.pid] for p in processes if p.pid in keys}
        processes = self._with_cuda_host_alloc(processes, top_keys, now)
        processes = self._with_cgroup_cpu(processes, top_keys, now)
        self._process_marks = {key: mark for key, mark in self._process_marks.items() if key in seen}
        self._main_thread_marks = {key: mark for key, mark in self._main_thread_marks.items() if key in seen}
        self._run_delay_marks = {key: mark for key, mark in self._run_delay_marks.items() if key in seen}
        self._threads = {key: threads for key, threads in self._threads.items() if key in seen}
        return HostState(
            timestamp=time.time(),
            hostname=self._hostname,
            cpu_percent=cpu_percent,
            cpu_per_core_percent=per_core,
            load_avg=os.getloadavg(),
            mem_total_bytes=mem_total,
            mem_used_bytes=mem_total - mem_available,
            mem_available_bytes=mem_available,
            swap_total_bytes=swap_total,
            swap_used_bytes=swap_used,
            processes=processes,
        )

    def _process(
        self, pid: int, now: float, seen: set[_Key], finder: ChildFinder, depth: int, keys: dict[int, _Key]
    ) -> ProcessStats:
        """One process from its stat, status and statm (the files psutil's oneshot reads), and its
        children. The figures and failures are psutil's: a process gone meanwhile is "exited", an
        unreadable stat "access denied", an unreadable status or statm leaves their figures None."""
        directory = f"{os.fspath(self._proc_root)}/{pid}"
        try:
            stat = _parse_process_stat(_read_whole_record(f"{directory}/stat"))
        except (FileNotFoundError, ProcessLookupError):
            return _missing(pid, f"process {pid} has exited")
        except PermissionError:
            return _missing(pid, _access_denied(pid))
        except OSError as exc:
            return _missing(pid, f"cannot read /proc/{pid}/stat: {exc.strerror or exc}")
        if stat is None:
            return _missing(pid, f"cannot parse /proc/{pid}/stat")
        key = (pid, stat.start_ticks)
        seen.add(key)
        keys[pid] = key
        status: bytes | None = None
        status_error = None
        try:
            status = _read_whole_record(f"{directory}/status")
        except (FileNotFoundError, ProcessLookupError):
            return _missing(pid, f"process {pid} has exited")
        except PermissionError:
            status_error = f"cannot read /proc/{pid}/status (permission denied): locked memory unknown"
        except OSError as exc:
            status_error = f"cannot read /proc/{pid}/status: {exc.strerror or exc}"
        try:
            statm: bytes | None = _read_whole_record(f"{directory}/statm")
        except (FileNotFoundError, ProcessLookupError):
            return _missing(pid, f"process {pid} has exited")
        except OSError:
            statm = None
        name = os.fsdecode(stat.comm)
        if len(name) >= _COMM_LENGTH:
            try:
                name = psutil.Process(pid).name()
            except psutil.NoSuchProcess:
                return _missing(pid, f"process {pid} has exited")
            except psutil.AccessDenied:
                return _missing(pid, _access_denied(pid))
        rss = threads = None
        threads_match = _THREADS.search(status) if status is not None else None
        rss_pages = statm.split()[1:2] if statm is not None else []
        if threads_match is not None and rss_pages and rss_pages[0].isdigit():
            rss, threads = int(rss_pages[0]) * _PAGE_SIZE, int(threads_match.group(1))
        status_text = status.decode("utf-8", "replace") if status is not None else None
        memory = parse_status(status_text) if status_text is not None else None
        allowed = parse_cpulist(parse_status_value(status_text, "Cpus_allowed_list")) if status_text else ()
        cpu_percent = self._cpu_percent(key, stat.cpu_s, now)
        main_thread = self._main_thread_cpu_percent(key, directory, now) if depth == 0 else None
        run_delay = self._run_delay_percent(key, directory, now) if depth > 0 else None
        children: list[int] = []
        if depth < MAX_CHILD_DEPTH and not _is_other_thread(status, pid):
            children = self._children(key, stat.threads, directory, finder)[:MAX_CHILDREN_PER_PROCESS]
        kids = tuple(self._process(child, now, seen, finder, depth + 1, keys) for child in children)
        return ProcessStats(
            pid=pid,
            name=name,
            user=self._user_names.of_status(status, now) if status is not None else None,
            cpu_percent=cpu_percent,
            rss_bytes=rss,
            num_threads=threads,
            # Not measurable per process from /proc: see ProcessStats.pinned_bytes.
            pinned_bytes=None,
            children=kids,
            error=status_error,
            locked_bytes=memory.locked_bytes if memory else None,
            pinned_vm_bytes=memory.pinned_vm_bytes if memory else None,
            shmem_rss_bytes=memory.shmem_rss_bytes if memory else None,
            ppid=stat.ppid,
            cpus_allowed=allowed or None,
            main_thread_cpu_percent=main_thread,
            run_delay_percent=run_delay,
        )

    def _main_thread_cpu_percent(self, key: _Key, directory: str, now: float) -> float | None:
        """ProcessStats.main_thread_cpu_percent: the CPU of the thread whose id is the process's (the
        training loop's, but for a loop on a thread of its own), against its last reading."""
        try:
            stat = _parse_process_stat(_read_whole_record(f"{directory}/task/{key[0]}/stat"))
        except OSError:
            return None
        if stat is None:
            return None
        return _percent_since(self._main_thread_marks, key, stat.cpu_s, now)

    def _run_delay_percent(self, key: _Key, directory: str, now: float) -> float | None:
        """ProcessStats.run_delay_percent, against its last reading."""
        try:
            delay_s = parse_run_delay_s(_read_whole_record(f"{directory}/schedstat"))
        except OSError:
            return None
        if delay_s is None:
            return None
        return _percent_since(self._run_delay_marks, key, delay_s, now)

    def _children(self, key: _Key, threads: int | None, directory: str, finder: ChildFinder) -> list[int]:
        """finder.children(pid), reading the children files of the thread ids listed last time while the
        thread count is the same and every one of them is still there (then they are the same threads)."""
        task_dir = f"{directory}/task"
        known = self._threads.get(key)
        if not finder.walked and threads is not None:
            tids = known[1] if known is not None and known[0] == threads else None
            if tids is None:
                try:
                    tids = os.listdir(task_dir)
                except OSError:
                    tids = None
            if tids is not None and len(tids) <= MAX_THREADS_FOR_CHILDREN:
                children = _children_of_threads(task_dir, tids)
                if children is not None:
                    if len(tids) == threads:
                        self._threads[key] = (threads, tids)
                    return children
        self._threads.pop(key, None)
        return finder.children(key[0])

    def _with_cuda_host_alloc(
        self, processes: tuple[ProcessStats, ...], keys: dict[int, _Key], now: float
    ) -> tuple[ProcessStats, ...]:
        """Add each watched process's cudaHostAlloc figure: re-read where older than the smaps interval,
        oldest first, at most ``max_smaps_reads`` smaps per sample; the rest keep their last reading."""
        readings = {key: self._host_alloc[key] for key in keys.values() if key in self._host_alloc}
        shmem = {keys[stats.pid]: stats.shmem_rss_bytes for stats in processes if stats.pid in keys}
        due = [
            key
            for key in keys.values()
            if key not in readings
            or self._host_alloc_due(readings[key], shmem.get(key), now - readings[key].read_at)
        ]
        due.sort(key=lambda key: readings[key].read_at if key in readings else float("-inf"))
        smaps_reads = 0
        for key in due:
            if smaps_reads >= self._max_smaps_reads:
                break
            reading, read_smaps = self._read_host_alloc(key[0], now, shmem.get(key))
            smaps_reads += read_smaps
            if reading is None:
                continue
            before = readings.get(key)
            if read_smaps and before is not None and before.value == reading.value:
                # Read for a move of RssShmem that was not this figure's: wait longer next time.
                moved = before.shmem_rss_bytes != reading.shmem_rss_bytes
                reading = replace(reading, same_reads=before.same_reads + moved)
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
            result.append(
                replace(
                    stats,
                    cuda_host_alloc_bytes=reading.value,
                    error=error,
                    cuda_host_alloc_age_s=None if reading.value is None else max(0.0, now - reading.read_at),
                )
            )
        return tuple(result)

    def _with_cgroup_cpu(
        self, processes: tuple[ProcessStats, ...], keys: dict[int, _Key], now: float
    ) -> tuple[ProcessStats, ...]:
        """Add each watched process's cgroup CPU quota and throttled share (not their workers': they
        share the cgroup, and the analysis takes it from the rank)."""
        self._cgroup_cpu.retain(set(keys.values()))
        result = []
        for stats in processes:
            reading = self._cgroup_cpu.read(keys[stats.pid], now) if stats.pid in keys else None
            if reading is None or reading.quota_cores is None:
                result.append(stats)
                continue
            result.append(
                replace(
                    stats,
                    cpu_quota_cores=reading.quota_cores,
                    cpu_quota_file=reading.quota_file,
                    cpu_throttled_share=reading.throttled_share,
                    cpu_quota_used_share=reading.used_share,
                )
            )
        return tuple(result)

    def _host_alloc_due(self, reading: _HostAllocReading, shmem_rss_bytes: int | None, age_s: float) -> bool:
        """A CUDA process's figure is re-read when its RssShmem moved (or is unknown), or when old; after
        reads that found it unchanged, the wait doubles, up to the max age."""
        wait_s = min(self._smaps_interval_s * 2 ** min(reading.same_reads, 16), self._smaps_max_age_s)
        if age_s < wait_s:
            return False
        if reading.value is None or shmem_rss_bytes is None or age_s >= self._smaps_max_age_s:
            return True  # not (yet) a CUDA process, unreadable, or no RssShmem to go by
        return shmem_rss_bytes != reading.shmem_rss_bytes

    def _read_host_alloc(
        self, pid: int, now: float, shmem_rss_bytes: int | None
    ) -> tuple[_HostAllocReading | None, bool]:
        """(reading, whether smaps was read). No reading when the process exited meanwhile."""
        directory = f"{os.fspath(self._proc_root)}/{pid}"
        try:
            maps = read_proc_file(f"{directory}/maps").decode("utf-8", "surrogateescape")
            if not maps_has_pathname(maps, self._nvidia_control_device):
                return _HostAllocReading(value=None, read_at=now), False
            smaps = read_proc_file(f"{directory}/smaps").decode("utf-8", "surrogateescape")
        except (FileNotFoundError, ProcessLookupError):
            return None, False
        except PermissionError:
            return _HostAllocReading(
                value=None,
                read_at=now,
                error=(
                    f"cannot read the memory maps of process {pid} (permission denied): its CUDA pinned "
                    "memory is unknown; run xfertop as its user (or root) to see it"
                ),
            ), False
        except OSError as exc:
            return _HostAllocReading(
                value=None,
                read_at=now,
                error=(f"cannot read the memory maps of process {pid}: {exc.strerror or exc}"),
            ), False
        return _HostAllocReading(
            value=cuda_host_alloc_bytes(smaps), read_at=now, shmem_rss_bytes=shmem_rss_bytes
        ), True

    def _cpu_percent(self, key: _Key, cpu_s: float, now: float) -> float | None:
        return _percent_since(self._process_marks, key, cpu_s, now)


def _percent_since(
    marks: dict[_Key, tuple[float, float]], key: _Key, cpu_s: float, now: float
) -> float | None:
    """Percent of one core used since ``key``'s mark in ``marks`` (then marked again at ``now``); None the
    first time."""
    previous = marks.get(key)
    marks[key] = (cpu_s, now)
    if previous is None or now <= previous[1]:
        return None
    return max(0.0, 100.0 * (cpu_s - previous[0]) / (now - previous[1]))


def _access_denied(pid: int) -> str:
    return (
        f"access denied to process {pid}: it belongs to another user; "
        "run xfertop as that user (or root) to see it"
    )


def _is_other_thread(status: bytes | None, pid: int) -> bool:
    """Whether ``pid`` is a thread of another process (its Tgid differs): processes list no children
    under a thread's id (the ppid in /proc/<pid>/stat is the parent's process id)."""
    tgid = _TGID.search(status) if status is not None else None
    return tgid is not None and int(tgid.group(1)) != pid


def _missing(pid: int, error: str) -> ProcessStats:
    return ProcessStats(
        pid=pid,
        name="?",
        user=None,
        cpu_percent=None,
        rss_bytes=None,
        num_threads=None,
        pinned_bytes=None,
        error=error,
    )
