"""Where a process runs and allocates: CPU affinity, the CPUs its threads last ran on, memory per node.

Everything is read below ``proc_root`` (``/proc`` live, a captured tree in tests), so psutil is not
used here: Cpus_allowed_list in /proc/<pid>/status is what sched_getaffinity returns.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from xfertop.model.topology import ProcessPlacement, WatchedProcess
from xfertop.sources.proc_memory import parse_numa_maps_bytes_by_node, parse_status_value
from xfertop.sources.sysfs_pci import parse_cpulist

#: Threads read per process: enough to see where a training process runs, bounded for huge thread pools.
MAX_THREADS_READ = 256
#: /proc/<pid>/stat field 39 (1-based): the CPU the task last ran on.
_PROCESSOR_FIELD = 39


@dataclass(frozen=True)
class ProcStat:
    comm: str
    ppid: int
    processor: int | None


def parse_stat(text: str) -> ProcStat | None:
    """/proc/<pid>/stat. The command name may hold spaces and parentheses: split at the last ')'."""
    head, sep, tail = text.rpartition(")")
    if not sep or "(" not in head:
        return None
    comm = head.split("(", 1)[1]
    fields = tail.split()  # fields[0] is field 3 (state)
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


def children_by_parent(proc_root: Path) -> dict[int, list[int]]:
    """ppid -> pids, from every /proc/<pid>/stat (one pass, shared by all watched processes)."""
    tree: dict[int, list[int]] = {}
    try:
        names = os.listdir(proc_root)
    except OSError:
        return tree
    for name in names:
        if not name.isdigit():
            continue
        text = _read(proc_root / name / "stat")
        stat = parse_stat(text) if text else None
        if stat is not None:
            tree.setdefault(stat.ppid, []).append(int(name))
    return {ppid: sorted(pids) for ppid, pids in tree.items()}


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


def read_placement(proc_root: Path, watched: WatchedProcess, cpu_node: dict[int, int],
                   tree: dict[int, list[int]], with_workers: bool = True) -> ProcessPlacement:
    """One process (and, with_workers, its descendants) as placed right now; errors become sentences."""
    pid = watched.pid
    stat_text = _read(proc_root / str(pid) / "stat")
    stat = parse_stat(stat_text) if stat_text else None
    status_text = _read(proc_root / str(pid) / "status")
    if stat is None or status_text is None:
        return ProcessPlacement(pid=pid, name=None, rank=watched.rank, gpu_bus_id=watched.gpu_bus_id,
                                allowed_cpus=(), running_cpus=(), running_nodes=(),
                                memory_bytes_by_node=None, error=f"process {pid} has exited")
    cpus = running_cpus(proc_root, pid)
    numa_maps = _read(proc_root / str(pid) / "numa_maps")
    error = None
    if numa_maps is None:
        error = (f"cannot read /proc/{pid}/numa_maps (another user's process, or no NUMA support): "
                 "memory placement unknown")
    workers = ()
    if with_workers:
        workers = tuple(
            read_placement(proc_root, WatchedProcess(child), cpu_node, tree, with_workers=False)
            for child in descendants(pid, tree))
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
