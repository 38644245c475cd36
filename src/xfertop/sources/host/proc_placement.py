"""Where a process runs and allocates: CPU affinity, the CPUs its threads last ran on, memory per node.

Everything is read below ``proc_root`` (``/proc`` live, a captured tree in tests), so psutil is not
used here: Cpus_allowed_list in /proc/<pid>/status is what sched_getaffinity returns.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from xfertop.model.topology import ProcessPlacement, WatchedProcess
from xfertop.procfs import run_delay_ns, split_stat
from xfertop.sources.host.proc_memory import parse_numa_maps_bytes_by_node, parse_status_value
from xfertop.sources.topology.sysfs_pci import parse_cpulist

#: Threads read per process: enough to see where a training process runs, bounded for huge thread pools.
MAX_THREADS_READ = 256
#: /proc/<pid>/stat field 39 (1-based): the CPU the task last ran on.
_PROCESSOR_FIELD = 39
#: task_children reads one children file per thread; past this many threads one walk over /proc
#: (children_by_parent) costs less.
MAX_THREADS_FOR_CHILDREN = 1024
_READ_CHUNK = 1 << 16


@dataclass(frozen=True)
class ProcStat:
    comm: str
    ppid: int
    processor: int | None


def parse_stat(text: str) -> ProcStat | None:
    """/proc/<pid>/stat. The command name may hold spaces and parentheses: split at the last ')'."""
    parts = split_stat(text)
    if parts is None:
        return None
    _, comm, after = parts
    if comm is None:
        return None
    fields = after.split()  # fields[0] is field 3 (state)
    try:
        ppid = int(fields[1])
    except (IndexError, ValueError):
        return None
    index = _PROCESSOR_FIELD - 3
    processor = int(fields[index]) if len(fields) > index and fields[index].lstrip("-").isdigit() else None
    return ProcStat(comm=comm, ppid=ppid, processor=processor)


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def read_proc_file(path: str) -> bytes:
    """The whole of a /proc file, with os.open/os.read: a few microseconds for stat or status, where
    Path.read_text costs three times as much. Raises OSError (FileNotFoundError, ProcessLookupError for
    a process that exited, PermissionError) like open(). A seq_file hands out about a page per read, so
    read until the end."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunk = os.read(fd, _READ_CHUNK)
        if not chunk:
            return chunk
        chunks = [chunk]
        while chunk := os.read(fd, _READ_CHUNK):
            chunks.append(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    finally:
        os.close(fd)


def parse_run_delay_s(data: bytes) -> float | None:
    """/proc/<pid>/schedstat's run delay in seconds (procfs.run_delay_ns); None where malformed."""
    delay_ns = run_delay_ns(data)
    return None if delay_ns is None else delay_ns / 1e9


def _stat_ppid(data: bytes) -> int | None:
    """The parent pid in /proc/<pid>/stat bytes, or None where parse_stat would give no ProcStat."""
    parts = split_stat(data)
    if parts is None or parts[1] is None:
        return None
    fields = parts[2].split(None, 2)
    try:
        return int(fields[1])
    except (IndexError, ValueError):
        return None


def children_by_parent(proc_root: Path) -> dict[int, list[int]]:
    """ppid -> pids, from every /proc/<pid>/stat (one pass, shared by all watched processes).

    Reads every process on the machine: where only a few processes' children are wanted,
    ChildFinder reads just theirs."""
    tree: dict[int, list[int]] = {}
    try:
        names = os.listdir(proc_root)
    except OSError:
        return tree
    root = os.fspath(proc_root)
    for name in names:
        if not name.isdigit():
            continue
        try:
            ppid = _stat_ppid(read_proc_file(f"{root}/{name}/stat"))
        except OSError:
            continue
        if ppid is not None:
            tree.setdefault(ppid, []).append(int(name))
    return {ppid: sorted(pids) for ppid, pids in tree.items()}


def task_children(proc_root: Path, pid: int) -> list[int] | None:
    """The children of process ``pid`` (sorted), from /proc/<pid>/task/<tid>/children: a child is listed
    under the thread that forked it, so every thread's file is read. ``pid`` must be a process id (a
    thread-group leader): for another thread's id this answers for its whole process. A few files per
    process instead of one per process on the machine (children_by_parent).

    None where that cannot tell: the kernel has no children files (built without CONFIG_PROC_CHILDREN,
    or a captured tree), the task directory is unreadable, or the process has more than
    MAX_THREADS_FOR_CHILDREN threads (then one walk over /proc is the cheaper read). [] for a process
    that has exited."""
    task_dir = f"{os.fspath(proc_root)}/{pid}/task"
    try:
        tids = os.listdir(task_dir)
    except (FileNotFoundError, ProcessLookupError):
        return []
    except OSError:
        return None
    if len(tids) > MAX_THREADS_FOR_CHILDREN:
        return None
    children: set[int] = set()
    for tid in tids:
        try:
            data = read_proc_file(f"{task_dir}/{tid}/children")
        except (FileNotFoundError, ProcessLookupError):
            if os.path.isdir(f"{task_dir}/{tid}"):
                return None  # the thread is there, its children file is not: no CONFIG_PROC_CHILDREN
            continue  # the thread exited; its children went to another thread of the process
        except OSError:
            return None
        try:
            children.update(int(word) for word in data.split())
        except ValueError:
            return None
    return sorted(children)


class ChildFinder:
    """Children of the few processes asked about, read through task_children where the kernel can, else
    (first time it cannot) from one children_by_parent walk, which then answers every later question.

    One finder per sample: it keeps that walk, so a later sample sees new workers and dead ones gone."""

    def __init__(self, proc_root: Path) -> None:
        self._proc_root = proc_root
        self._tree: dict[int, list[int]] | None = None

    @property
    def walked(self) -> bool:
        """Whether this finder fell back to reading every process's stat."""
        return self._tree is not None

    def children(self, pid: int) -> list[int]:
        if self._tree is None:
            found = task_children(self._proc_root, pid)
            if found is not None:
                return found
            self._tree = children_by_parent(self._proc_root)
        return self._tree.get(pid, [])


def descendants(pid: int, tree: dict[int, list[int]], limit: int = 1024) -> list[int]:
    found: list[int] = []
    stack = list(reversed(tree.get(pid, [])))
    while stack and len(found) < limit:
        child = stack.pop()
        found.append(child)
        stack.extend(reversed(tree.get(child, [])))
    return found


def running_cpus(proc_root: Path, pid: int) -> tuple[int, ...]:
    """CPUs the process's threads last ran on (sorted, distinct)."""
    task_dir = proc_root / str(pid) / "task"
    try:
        tids = sorted(os.listdir(task_dir), key=lambda t: int(t) if t.isdigit() else 0)[:MAX_THREADS_READ]
    except OSError:
        tids = []
    paths = [task_dir / tid / "stat" for tid in tids] or [proc_root / str(pid) / "stat"]
    cpus = set()
    for path in paths:
        text = _read(path)
        stat = parse_stat(text) if text else None
        if stat is not None and stat.processor is not None:
            cpus.add(stat.processor)
    return tuple(sorted(cpus))


def read_placement(
    proc_root: Path,
    watched: WatchedProcess,
    cpu_node: dict[int, int],
    tree: dict[int, list[int]],
    with_workers: bool = True,
) -> ProcessPlacement:
    """One process (and, with_workers, its descendants) as placed right now; errors become sentences."""
    pid = watched.pid
    stat_text = _read(proc_root / str(pid) / "stat")
    stat = parse_stat(stat_text) if stat_text else None
    status_text = _read(proc_root / str(pid) / "status")
    if stat is None or status_text is None:
        return ProcessPlacement(
            pid=pid,
            name=None,
            rank=watched.rank,
            gpu_bus_id=watched.gpu_bus_id,
            allowed_cpus=(),
            running_cpus=(),
            running_nodes=(),
            memory_bytes_by_node=None,
            error=f"process {pid} has exited",
        )
    cpus = running_cpus(proc_root, pid)
    numa_maps = _read(proc_root / str(pid) / "numa_maps")
    error = None
    if numa_maps is None:
        error = (
            f"cannot read /proc/{pid}/numa_maps (another user's process, or no NUMA support): "
            "memory placement unknown"
        )
    workers: tuple[ProcessPlacement, ...] = ()
    if with_workers:
        workers = tuple(
            read_placement(proc_root, WatchedProcess(child), cpu_node, tree, with_workers=False)
            for child in descendants(pid, tree)
        )
    return ProcessPlacement(
        pid=pid,
        name=stat.comm,
        rank=watched.rank,
        gpu_bus_id=watched.gpu_bus_id,
        allowed_cpus=parse_cpulist(parse_status_value(status_text, "Cpus_allowed_list")),
        running_cpus=cpus,
        running_nodes=tuple(sorted({cpu_node[cpu] for cpu in cpus if cpu in cpu_node})),
        memory_bytes_by_node=parse_numa_maps_bytes_by_node(numa_maps) if numa_maps is not None else None,
        workers=workers,
        error=error,
    )
