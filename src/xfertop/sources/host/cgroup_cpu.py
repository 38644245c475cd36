"""The CPU limit of a process's cgroup: its quota in cores, and how often the cgroup ran out of it.

cgroup v2 sets a quota in ``cpu.max`` ("200000 100000": 200 ms of CPU per 100 ms period, 2 cores;
"max 100000": none); cgroup v1 in the cpu controller's ``cpu.cfs_quota_us`` and ``cpu.cfs_period_us``
(-1: none). A cgroup gets no more than the smallest quota on its path up to the root, so that is the
process's quota: the files of its cgroup and of each ancestor up to the mount are read. Both versions
count in ``cpu.stat`` the periods in which the cgroup ran (``nr_periods``) and those in which it ran out
of quota and was stopped until the next one (``nr_throttled``); the counters of the cgroup whose quota
is the smallest are read, since that is where the kernel counts the throttling. The CPU time that cgroup
used, against its quota, tells a cgroup that uses its quota up from one throttled only in bursts (its
threads ask for many cores at once, then idle): v2's ``cpu.stat`` has it (``usage_usec``), v1 has it in
``cpuacct.usage`` (ns) where cpuacct is mounted with cpu ("cpu,cpuacct"), and else it is unknown.

Where the files are: /proc/<pid>/cgroup names the process's cgroup in each hierarchy, relative to the
reader's cgroup namespace; the reader's /proc/self/mountinfo says where each hierarchy is mounted and
which of its directories the mount shows (its root). The reader's mounts, not the process's, because
those are the paths this process can open. When the cpu controller is bound to a v1 hierarchy it is in
no v2 one, so a v1 cpu line wins (a hybrid host: v1 controllers and an empty unified hierarchy, "0::/").

What cannot be known is None, never an exception: a process that exited, a file missing or unreadable,
malformed text, a cgroup path outside what the mount shows (a process in another cgroup namespace:
"/../.." paths). Limits set above a mount's root (a container that sees only its own subtree) are out of
sight, so the quota found is an upper bound on the real one.

``CgroupCpuReader`` keeps the quota of each (pid, start time) and reads it again every
``QUOTA_REFRESH_S`` (a quota seldom changes; the walk reads a few files), and the throttle counters on
every call (one small file, and none at all for a process without a quota).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from xfertop.sources.host.proc_placement import read_proc_file

#: A process's cgroup and the quotas on its path are read again after this long.
QUOTA_REFRESH_S = 10.0
#: The throttled share spans at least this long (once there are readings that old): a share over one
#: 1 s sample holds only ten 100 ms periods. kube-prometheus's CPUThrottlingHigh alert takes 5 minutes;
#: a verdict window is 50 steps, so a shorter span lets a change show.
THROTTLE_WINDOW_S = 10.0

#: (pid, start time in clock ticks since boot): a reused pid is another process.
_Key = tuple[int, int]


@dataclass(frozen=True)
class CgroupMount:
    """One mount of a cgroup hierarchy, from mountinfo."""

    #: 1 or 2.
    version: int
    #: The directory of the hierarchy that the mount shows ("/" for the whole hierarchy).
    root: str
    mount_point: str
    #: The v1 controllers bound to it (its super options: "cpu", "cpuacct", ...); empty for v2.
    controllers: frozenset[str] = frozenset()


@dataclass(frozen=True)
class CgroupLine:
    """One line of /proc/<pid>/cgroup: "hierarchy-id:controllers:path"."""

    hierarchy_id: int
    controllers: frozenset[str]
    path: str


@dataclass(frozen=True)
class CpuLimit:
    """The smallest CPU quota on a process's cgroup path."""

    #: 1 or 2.
    version: int
    #: The process's cgroup directory on this filesystem.
    cgroup_dir: str
    #: CPU time per period over the period: cores' worth. None: no quota on the visible path.
    quota_cores: float | None = None
    #: The file that sets it (cpu.max, or cpu.cfs_quota_us), on this filesystem.
    quota_file: str | None = None
    #: cpu.stat of the cgroup whose quota that is.
    stat_file: str | None = None


@dataclass(frozen=True)
class ThrottleCounters:
    """nr_periods and nr_throttled of one cpu.stat, and the cgroup's CPU time where it is known."""

    periods: int
    throttled: int
    #: CPU time used by the cgroup, microseconds (v2 cpu.stat usage_usec, v1 cpuacct.usage); None: unknown.
    usage_usec: int | None = None


def throttled_share(before: ThrottleCounters, after: ThrottleCounters) -> float | None:
    """The share of the periods between two readings in which the cgroup was throttled; None when no
    period passed (it did not run) or the counters went back (the cgroup was made again)."""
    periods = after.periods - before.periods
    throttled = after.throttled - before.throttled
    if periods <= 0 or throttled < 0:
        return None
    return min(1.0, throttled / periods)


def quota_used_share(
    before: ThrottleCounters, after: ThrottleCounters, elapsed_s: float, quota_cores: float
) -> float | None:
    """The cgroup's CPU time between two readings over what its quota allowed in that time; None where
    the usage is unknown, no time passed or the counter went back."""
    if before.usage_usec is None or after.usage_usec is None or elapsed_s <= 0 or quota_cores <= 0:
        return None
    used = after.usage_usec - before.usage_usec
    if used < 0:
        return None
    return used / 1e6 / (elapsed_s * quota_cores)


def shares_between(
    before: ThrottleCounters, after: ThrottleCounters, elapsed_s: float, quota_cores: float | None
) -> tuple[float | None, float | None]:
    """(throttled share, used share of the quota) between two readings ``elapsed_s`` apart."""
    used = quota_used_share(before, after, elapsed_s, quota_cores) if quota_cores else None
    return throttled_share(before, after), used


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash in paths as octal escapes (\\040)."""
    if "\\" not in field:
        return field
    out, i = [], 0
    while i < len(field):
        octal = field[i + 1 : i + 4]
        if field[i] == "\\" and len(octal) == 3 and all(c in "01234567" for c in octal):
            out.append(chr(int(octal, 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def parse_mountinfo(text: str) -> list[CgroupMount]:
    """The cgroup (v1) and cgroup2 mounts of a mountinfo, in its order; other lines and malformed ones
    are skipped. A line: id, parent, major:minor, root, mount point, options, optional fields, "-",
    filesystem type, source, super options."""
    mounts = []
    for line in text.splitlines():
        fields = line.split()
        if "-" not in fields[6:]:
            continue
        dash = fields.index("-", 6)
        if len(fields) < dash + 2:
            continue
        fstype, super_options = fields[dash + 1], fields[dash + 3] if len(fields) > dash + 3 else ""
        root, mount_point = _unescape(fields[3]), _unescape(fields[4])
        if fstype == "cgroup2":
            mounts.append(CgroupMount(2, root, mount_point))
        elif fstype == "cgroup":
            mounts.append(CgroupMount(1, root, mount_point, frozenset(super_options.split(","))))
    return mounts


def parse_proc_cgroup(text: str) -> list[CgroupLine]:
    """The lines of /proc/<pid>/cgroup; malformed ones are skipped. The v2 line is "0::/path"; a v1
    line names its controllers ("4:cpu,cpuacct:/path", "1:name=systemd:/path")."""
    lines = []
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3 or not parts[0].isdigit() or not parts[2].startswith("/"):
            continue
        controllers = frozenset(parts[1].split(",")) if parts[1] else frozenset()
        lines.append(CgroupLine(int(parts[0]), controllers, parts[2]))
    return lines


def parse_cpu_max(text: str) -> float | None:
    """Cores of quota in a v2 cpu.max ("$MAX $PERIOD"); None for "max" (no quota). Raises ValueError
    for anything else."""
    fields = text.split()
    if len(fields) != 2:
        raise ValueError(f"cpu.max holds {text!r}")
    period = int(fields[1])
    if period <= 0:
        raise ValueError(f"cpu.max holds {text!r}")
    if fields[0] == "max":
        return None
    quota = int(fields[0])
    if quota <= 0:
        raise ValueError(f"cpu.max holds {text!r}")
    return quota / period


def parse_cfs_quota(quota_text: str, period_text: str) -> float | None:
    """Cores of quota from v1 cpu.cfs_quota_us and cpu.cfs_period_us; None for -1 (no quota). Raises
    ValueError for anything else."""
    quota, period = int(quota_text.strip()), int(period_text.strip())
    if period <= 0 or (quota <= 0 and quota != -1):
        raise ValueError(f"cpu.cfs_quota_us {quota_text!r}, cpu.cfs_period_us {period_text!r}")
    return None if quota == -1 else quota / period


def parse_throttle_counters(text: str) -> ThrottleCounters | None:
    """nr_periods and nr_throttled of a cpu.stat (v1 and v2 alike); None where either is missing (v2
    prints them only where the cpu controller is enabled)."""
    values = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) == 2 and words[1].isdigit():
            values[words[0]] = int(words[1])
    if "nr_periods" not in values or "nr_throttled" not in values:
        return None
    return ThrottleCounters(values["nr_periods"], values["nr_throttled"], values.get("usage_usec"))


def _read_text(path: Path | str) -> str | None:
    try:
        return read_proc_file(os.fspath(path)).decode("utf-8", "replace")
    except OSError:
        return None


def read_throttle_counters(stat_file: str) -> ThrottleCounters | None:
    """The counters of one cpu.stat; None where it cannot be read (the cgroup was removed). Without
    usage_usec in it (v1), the usage is cpuacct.usage beside it, where cpuacct shares the mount."""
    text = _read_text(stat_file)
    counters = parse_throttle_counters(text) if text is not None else None
    if counters is None or counters.usage_usec is not None:
        return counters
    usage_ns = _read_text(os.path.join(os.path.dirname(stat_file), "cpuacct.usage"))
    if usage_ns is None or not usage_ns.strip().isdigit():
        return counters
    return ThrottleCounters(counters.periods, counters.throttled, int(usage_ns.strip()) // 1000)


def read_cgroup_mounts(proc_root: Path = Path("/proc")) -> list[CgroupMount] | None:
    """The reader's cgroup mounts (proc_root/self/mountinfo); None where it cannot be read."""
    text = _read_text(proc_root / "self" / "mountinfo")
    return parse_mountinfo(text) if text is not None else None


def _relative_to(path: str, root: str) -> PurePosixPath | None:
    """``path`` below ``root`` (both hierarchy paths), or None where it is not."""
    try:
        return PurePosixPath(path).relative_to(PurePosixPath(root))
    except ValueError:
        return None


def cgroup_directory(
    mounts: list[CgroupMount], path: str, fs_root: Path = Path("/")
) -> tuple[Path, Path] | None:
    """(the directory of the cgroup at hierarchy ``path`` on this filesystem, the mount point it lies
    under), through the one of ``mounts`` (all of one hierarchy) whose root holds it, the deepest root
    first. A path outside every mount's root: a mount made in another cgroup namespace may still show it
    at its own path, so that is tried if it exists; a path that climbs out of the reader's namespace
    ("/../x") has no directory here."""
    if ".." in PurePosixPath(path).parts or not mounts:
        return None
    for mount in sorted(mounts, key=lambda m: len(PurePosixPath(m.root).parts), reverse=True):
        relative = _relative_to(path, mount.root)
        if relative is not None:
            top = fs_root / mount.mount_point.lstrip("/")
            return top / relative, top
    top = fs_root / mounts[0].mount_point.lstrip("/")
    fallback = top / path.lstrip("/")
    return (fallback, top) if os.path.isdir(fallback) else None  # never raises (EACCES)


def _ancestors(directory: Path, top: Path) -> list[Path]:
    """``directory`` and each parent up to ``top``, leaf first."""
    chain = [directory]
    while chain[-1] != top and chain[-1].parent != chain[-1]:
        chain.append(chain[-1].parent)
    return chain


def _level_quota(version: int, directory: Path) -> tuple[float | None, Path] | None:
    """(quota cores or None for none, the file) of one cgroup; None where unknown (missing: v2 without
    the cpu controller there, or the root; unreadable; malformed)."""
    try:
        if version == 2:
            quota_file = directory / "cpu.max"
            text = _read_text(quota_file)
            return (parse_cpu_max(text), quota_file) if text is not None else None
        quota_file = directory / "cpu.cfs_quota_us"
        quota_text, period_text = _read_text(quota_file), _read_text(directory / "cpu.cfs_period_us")
        if quota_text is None or period_text is None:
            return None
        return parse_cfs_quota(quota_text, period_text), quota_file
    except ValueError:
        return None


def _smallest_quota(version: int, directory: Path, top: Path) -> CpuLimit:
    limit = CpuLimit(version=version, cgroup_dir=os.fspath(directory))
    for level in _ancestors(directory, top):
        found = _level_quota(version, level)
        cores, quota_file = found if found is not None else (None, level)
        if cores is None:
            continue
        if limit.quota_cores is None or cores < limit.quota_cores:
            limit = CpuLimit(
                version, limit.cgroup_dir, cores, os.fspath(quota_file), os.fspath(level / "cpu.stat")
            )
    return limit


def read_cpu_limit(
    pid: int,
    proc_root: Path = Path("/proc"),
    fs_root: Path = Path("/"),
    mounts: list[CgroupMount] | None = None,
) -> CpuLimit | None:
    """The smallest CPU quota on ``pid``'s cgroup path (``quota_cores`` None: none there), or None where
    its cgroup cannot be found (exited, no cpu hierarchy mounted, a path outside the mounts).
    ``mounts``: the reader's cgroup mounts, read from proc_root/self/mountinfo when not given; their
    mount points are taken below ``fs_root``."""
    text = _read_text(proc_root / str(pid) / "cgroup")
    if text is None:
        return None
    if mounts is None:
        mounts = read_cgroup_mounts(proc_root)
        if mounts is None:
            return None
    lines = parse_proc_cgroup(text)
    v1 = next((line for line in lines if "cpu" in line.controllers), None)
    if v1 is not None:
        version, path = 1, v1.path
        candidates = [m for m in mounts if m.version == 1 and "cpu" in m.controllers]
    else:
        v2 = next((line for line in lines if line.hierarchy_id == 0 and not line.controllers), None)
        if v2 is None:
            return None
        version, path = 2, v2.path
        candidates = [m for m in mounts if m.version == 2]
    found = cgroup_directory(candidates, path, fs_root)
    if found is None or not os.path.isdir(found[0]):
        return None
    return _smallest_quota(version, *found)


@dataclass(frozen=True)
class CgroupCpuReading:
    """What a process's cgroup says about its CPU, as CgroupCpuReader.read gives it."""

    #: The smallest quota on its cgroup path in cores; None: no quota.
    quota_cores: float | None
    #: The file that sets it, on this filesystem.
    quota_file: str | None
    #: Share of the periods throttled over the last THROTTLE_WINDOW_S or so; None without a quota,
    #: before the second reading, or when the cgroup did not run.
    throttled_share: float | None
    #: The cgroup's CPU time over the same span against what its quota allowed (1.0: all of it); None
    #: where the usage is unknown (v1 without cpuacct on the cpu mount) or before the second reading.
    used_share: float | None = None


def _stat_file(limit: CpuLimit | None) -> str | None:
    return limit.stat_file if limit is not None else None


@dataclass
class _Known:
    limit: CpuLimit | None
    read_at: float
    #: (monotonic seconds, counters) of the readings in the throttle window, oldest first.
    counters: deque[tuple[float, ThrottleCounters]] = field(default_factory=deque)


class CgroupCpuReader:
    """A process's CPU quota, read again every ``refresh_s``, and its throttled share on every call."""

    def __init__(
        self,
        proc_root: Path = Path("/proc"),
        fs_root: Path = Path("/"),
        refresh_s: float = QUOTA_REFRESH_S,
        window_s: float = THROTTLE_WINDOW_S,
    ) -> None:
        self._proc_root = proc_root
        self._fs_root = fs_root
        self._refresh_s = refresh_s
        self._window_s = window_s
        self._known: dict[_Key, _Known] = {}
        self._mounts: list[CgroupMount] | None = None
        self._mounts_read_at = float("-inf")

    def read(self, key: _Key, now: float) -> CgroupCpuReading | None:
        """The reading for the process ``key`` (pid, start ticks) at monotonic time ``now``; None where
        its cgroup cannot be found (see read_cpu_limit)."""
        known = self._known.get(key)
        if known is None or now - known.read_at >= self._refresh_s:
            limit = read_cpu_limit(key[0], self._proc_root, self._fs_root, self._mounts_at(now))
            # The throttle history carries on while the counters are the same cgroup's.
            same = known is not None and _stat_file(known.limit) == _stat_file(limit)
            known = _Known(limit, now, known.counters if known is not None and same else deque())
            self._known[key] = known
        limit = known.limit
        if limit is None:
            return None
        share = used = None
        if limit.stat_file is not None:
            counters = read_throttle_counters(limit.stat_file)
            if counters is None:
                known.read_at = float("-inf")  # moved or removed: find its cgroup again next time
                known.counters.clear()
            else:
                share, used = self._shares(known.counters, now, counters, limit.quota_cores)
        return CgroupCpuReading(limit.quota_cores, limit.quota_file, share, used)

    def retain(self, keys: Collection[_Key]) -> None:
        """Forget the processes not in ``keys`` (exited, no longer watched)."""
        self._known = {key: known for key, known in self._known.items() if key in keys}

    def _mounts_at(self, now: float) -> list[CgroupMount] | None:
        if self._mounts is None or now - self._mounts_read_at >= self._refresh_s:
            self._mounts = read_cgroup_mounts(self._proc_root)
            self._mounts_read_at = now
        return self._mounts

    def _shares(
        self,
        history: deque[tuple[float, ThrottleCounters]],
        now: float,
        counters: ThrottleCounters,
        quota_cores: float | None,
    ) -> tuple[float | None, float | None]:
        """(throttled share, used share of the quota) since the base reading."""
        history.append((now, counters))
        # Keep as the base the newest reading at least a window old.
        while len(history) > 2 and history[1][0] <= now - self._window_s:
            history.popleft()
        if len(history) < 2:
            return None, None
        since, base = history[0]
        return shares_between(base, counters, now - since, quota_cores)
