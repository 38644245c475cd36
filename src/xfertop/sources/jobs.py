"""Every live ring of this user, read about ten times a second and grouped into jobs.

Files that cannot be used (unknown version, truncated, another user's, a symlink...) are named in
``JobsState.problems`` and skipped; the others carry on. A rank whose process is gone is shown as
finished and its file is removed after a grace period; a live process whose heartbeat went quiet is
shown as stalled.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable

from xfertop import wire
from xfertop.model.jobs import JobsState, JobState, RankState, RankStatus
from xfertop.sources.base import PollingSource
from xfertop.sources.ring_reader import RingCounters, RingProblem, RingReader

NOT_READY_GRACE_S = 5.0


def job_key(header: wire.RingHeader) -> str:
    """TORCHELASTIC_RUN_ID, else MASTER_ADDR:PORT, else the parent of a multi-rank job, else the pid."""
    if header.run_id:
        return f"run:{header.run_id}"
    if header.master and header.world_size:
        return f"master:{header.master}"
    if header.world_size and header.world_size > 1:
        return f"ppid:{header.ppid}"
    return f"pid:{header.pid}"


def job_name(argv: tuple[str, ...]) -> str:
    """The script (or -m module) a job runs, for people: ``train.py`` rather than a python path."""
    args = list(argv)
    for index, arg in enumerate(args):
        if arg == "-m" and index + 1 < len(args):
            return f"-m {args[index + 1]}"
        if arg.endswith(".py"):
            return os.path.basename(arg)
    return os.path.basename(args[0]) if args else "?"


def process_alive(pid: int, start_ticks: int) -> bool:
    """The process that wrote the ring still runs (same pid and same start time: no pid reuse)."""
    try:
        return wire.process_start_ticks(pid) == start_ticks
    except (OSError, ValueError, IndexError):
        return False


class JobsSource(PollingSource[JobsState]):
    name = "jobs"

    def __init__(self, interval_s: float = 0.1, ring_dir: str | None = None, stall_after_s: float = 5.0,
                 finished_grace_s: float = 60.0, monotonic: Callable[[], float] = time.monotonic) -> None:
        super().__init__(interval_s)
        #: Where this viewer's own environment puts rings (JobsState.ring_dir) ...
        self.ring_dir = ring_dir or wire.ring_dir_path()
        #: ... and every directory read: without XFERTOP_DIR, also the other default places, because a
        #: job started from cron, a container or another session may not share our XDG_RUNTIME_DIR.
        self.ring_dirs = [ring_dir] if ring_dir else wire.ring_dir_candidates()
        self.stall_after_s = stall_after_s
        self.finished_grace_s = finished_grace_s
        self._monotonic = monotonic
        self._uid = os.getuid()
        self._readers: dict[str, RingReader] = {}
        self._dead_since: dict[str, float] = {}

    def sample(self) -> JobsState:
        problems: list[str] = []
        ranks: list[RankState] = []
        seen: set[str] = set()
        error = None
        for ring_dir in self.ring_dirs:
            trouble = self._scan(ring_dir, ranks, problems, seen)
            if trouble and ring_dir == self.ring_dir:
                error = trouble
            elif trouble:
                problems.append(trouble)
        for path in set(self._readers) - seen:
            self._forget(path)
        return JobsState(time.time(), _group(ranks), self.ring_dir, tuple(problems), error)

    def _scan(self, ring_dir: str, ranks: list[RankState], problems: list[str], seen: set[str]) -> str | None:
        """Read every ring in one directory; a sentence if the directory itself cannot be used."""
        try:
            problem = wire.ring_dir_problem(ring_dir, os.lstat(ring_dir))
            if problem:
                return problem
            names = sorted(os.listdir(ring_dir))
        except FileNotFoundError:
            return None  # no job has written here yet
        except OSError as exc:
            return f"cannot read ring directory {ring_dir}: {exc.strerror or exc}"
        for name in names:
            if not name.endswith(wire.RING_SUFFIX):
                continue
            path = os.path.join(ring_dir, name)
            seen.add(path)
            try:
                rank = self._read_one(path, problems)
            except Exception as exc:  # one odd file must not hide the other jobs
                problems.append(f"{path}: could not be read ({type(exc).__name__}: {exc}); will retry")
                self._forget(path)
                continue
            if rank is not None:
                ranks.append(rank)
        return None

    def _read_one(self, path: str, problems: list[str]) -> RankState | None:
        reader = self._reader_for(path, problems)
        if reader is None:
            return None
        reader.poll()
        counters = reader.counters()
        alive = process_alive(reader.header.pid, reader.header.start_ticks)
        if not alive and self._remove_if_expired(path):
            return None
        return _rank_state(reader, counters, self._status(reader, counters, alive))

    def _reader_for(self, path: str, problems: list[str]) -> RingReader | None:
        reader = self._readers.get(path)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            self._forget(path)
            return None
        if reader is not None and (reader.identity != (st.st_dev, st.st_ino) or not reader.still_valid()):
            self._forget(path)
            reader = None
        if reader is not None:
            return reader
        try:
            reader = RingReader(path, self._uid)
        except RingProblem as exc:
            cause = exc.__cause__
            young = time.time() - st.st_mtime < NOT_READY_GRACE_S
            if not (isinstance(cause, wire.RingNotReadyError) and young):
                problems.append(str(exc))
            return None
        except OSError as exc:
            problems.append(f"{path}: cannot open: {exc.strerror or exc}")
            return None
        self._readers[path] = reader
        return reader

    def _status(self, reader: RingReader, counters: RingCounters, alive: bool) -> RankStatus:
        if not alive or counters.state_flags & wire.STATE_CLOSED:
            return "finished"
        if _heartbeat_age_s(reader, counters) > self._stall_threshold_s(reader):
            return "stalled"
        return "live"

    def _stall_threshold_s(self, reader: RingReader) -> float:
        recent = [record.wall_ms for record in list(reader.steps)[-16:]]
        typical_s = statistics.median(recent) / 1000 if recent else 0.0
        return max(self.stall_after_s, 5 * typical_s)

    def _remove_if_expired(self, path: str) -> bool:
        now = self._monotonic()
        dead_since = self._dead_since.setdefault(path, now)
        if now - dead_since < self.finished_grace_s:
            return False
        reader = self._readers.get(path)
        try:
            st = os.lstat(path)
            if reader is not None and reader.identity == (st.st_dev, st.st_ino) and st.st_uid == self._uid:
                os.unlink(path)
        except OSError:
            pass
        self._forget(path)
        return True

    def _forget(self, path: str) -> None:
        reader = self._readers.pop(path, None)
        if reader is not None:
            reader.close()
        self._dead_since.pop(path, None)

    def _forget_all(self) -> None:
        for path in list(self._readers):
            self._forget(path)

    def close(self) -> None:
        self._forget_all()


def _heartbeat_age_s(reader: RingReader, counters: RingCounters) -> float:
    if counters.heartbeat_ns <= 0:  # no step closed yet: count from the ring's creation
        return max(0.0, (time.time_ns() - reader.header.created_unix_ns) / 1e9)
    return max(0.0, (time.perf_counter_ns() - counters.heartbeat_ns) / 1e9)


def _rank_state(reader: RingReader, counters: RingCounters, status: RankStatus) -> RankState:
    header = reader.header
    return RankState(
        pid=header.pid,
        host=header.host,
        rank=header.rank,
        local_rank=header.local_rank,
        world_size=header.world_size,
        job_key=job_key(header),
        device=reader.device(),
        argv=header.argv,
        status=status,
        heartbeat_age_s=_heartbeat_age_s(reader, counters),
        steps=tuple(reader.steps),
        pinned_host_bytes=counters.pinned_bytes,
        dataloader_workers=counters.dataloader_workers,
        reporter_errors=counters.errors,
        reporter_disabled=bool(counters.state_flags & wire.STATE_DISABLED),
        ring_path=reader.path,
        steps_lost=reader.steps_lost,
        gpu_steps_dropped=counters.gpu_steps_dropped,
    )


def _group(ranks: list[RankState]) -> tuple[JobState, ...]:
    by_key: dict[str, list[RankState]] = {}
    for rank in ranks:
        by_key.setdefault(rank.job_key, []).append(rank)
    jobs = []
    for key in sorted(by_key):
        members = sorted(by_key[key], key=lambda r: (r.rank is None, r.rank or 0, r.pid))
        jobs.append(JobState(job_key=key, name=job_name(members[0].argv), ranks=tuple(members)))
    return tuple(jobs)
