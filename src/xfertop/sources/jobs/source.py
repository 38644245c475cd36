"""Every live ring of this user, read about ten times a second and grouped into jobs.

Files that cannot be used (unknown version, truncated, another user's, a symlink...) are named in
``JobsState.problems`` and skipped; the others carry on. A rank whose process is gone is shown as
finished; its file is removed by ``remove_ended_rings`` (run at the first read and every few seconds)
once the grace period has passed since its last step, or since this source saw it die. A live process
whose heartbeat went quiet is shown as stalled.

What is held stays bounded however many jobs come and go: an ended ring is read to its end once, then
its mapping is dropped and its content kept as data (no descriptor, no mapped pages), and only the
``MAX_ENDED_RINGS`` rings that ended last are kept; the others are counted in one problem line.

Cost per read, for the rings of dead processes that pile up in a directory as much as for live ones:
the directory is listed again only when its mtime changed (no file created, removed or renamed
otherwise), and then each ring's name is checked for a new file; a writer found dead stays dead (a pid
and a start time name one process for good), and once its ring is read to the end it is not read
again; a live writer is held by a pidfd, so one poll() tells which writers exited and only those are
looked up in /proc; a ring that did not advance is not parsed again.
"""

from __future__ import annotations

import dataclasses
import errno
import functools
import itertools
import os
import select
import statistics
import time
from collections.abc import Callable

from xfertop import wire
from xfertop.model.jobs import JobsState, JobState, RankEnd, RankState, RankStatus
from xfertop.sources.base import PollingSource
from xfertop.sources.jobs.probe_shelf import ProbeShelf
from xfertop.sources.jobs.ring_reader import (
    ENDED_GRACE_S,
    RingCounters,
    RingProblem,
    RingReader,
    last_sign_of_life_ns,
    process_alive,
    remove_ended_rings,
)

NOT_READY_GRACE_S = 5.0
#: Ended rings kept (as data) at most: the ones that ended last. Each holds up to 1024 steps (~0.35 MB).
MAX_ENDED_RINGS = 64
#: How often ``remove_ended_rings`` runs while the source is read.
CLEANUP_PERIOD_S = 5.0
#: The walk over every directory above a ring directory (wire.check_ring_dir, ~20 us) is done again this
#: often, or at once when the ring directory itself is replaced; between walks a poll only lstats it.
DIR_RECHECK_S = 5.0
_OUT_OF_DESCRIPTORS = (errno.EMFILE, errno.ENFILE)
#: A listing is reused while the directory's mtime is unchanged, but only once it was taken this long
#: after that mtime: a change within the same timestamp tick (coarse, or whole seconds on some
#: filesystems) leaves the mtime as it was.
LISTING_SETTLED_NS = 3_000_000_000
#: How long the ring of an ended writer started by `xfertop run` (a launch token in its header) is read on
#: for the exit status its launcher records: that is written once the launcher's own child has ended,
#: which for torchrun's ranks (grandchildren of the launcher) comes after their own end.
LAUNCH_EXIT_GRACE_S = 10.0
#: A read should find at most this share of a ring's slots newly written: a ring filling faster than its
#: interval allows is read sooner (next_interval_s), down to READ_FLOOR_S, so that no step is overwritten
#: unread. A ring holds 1024 steps: at a 1 s interval, a job of over 512 steps/s is read faster.
FILL_SHARE_PER_READ = 0.5
READ_FLOOR_S = 0.05


def job_key(header: wire.RingHeader) -> str:
    """TORCHELASTIC_RUN_ID, else MASTER_ADDR:PORT, else the parent of a multi-rank job, else the pid."""
    if header.run_id:
        return f"run:{header.run_id}"
    if header.master and header.world_size:
        return f"master:{header.master}"
    if header.world_size and header.world_size > 1:
        return f"ppid:{header.ppid}"
    return f"pid:{header.pid}"


@functools.lru_cache(maxsize=256)
def job_name(argv: tuple[str, ...]) -> str:
    """The script (or -m module) a job runs, for people: ``train.py`` rather than a python path."""
    args = list(argv)
    for index, arg in enumerate(args):
        if arg == "-m" and index + 1 < len(args):
            return f"-m {args[index + 1]}"
        if arg.endswith(".py"):
            return os.path.basename(arg)
    return os.path.basename(args[0]) if args else "?"


@dataclasses.dataclass(frozen=True)
class _Listing:
    """The ring names of one directory as listed when its (st_dev, st_ino, st_mtime_ns) was ``stamp``."""

    stamp: tuple[int, int, int]
    paths: tuple[str, ...]
    #: Taken well after the mtime: while the stamp is unchanged, no name was added, removed or replaced.
    settled: bool


class _Ring:
    """One ring and what the source knows about its writer."""

    def __init__(self, reader: RingReader) -> None:
        self.reader = reader
        self.job_key = job_key(reader.header)
        #: The writer was found gone (for good: the same pid and start time never come back).
        self.dead = False
        #: Dead, and read to the end after its death: its content is final, kept as data (released).
        self.frozen = False
        #: The writer was seen running, and when (the source's clock) it was then seen gone.
        self.seen_alive = False
        self.died_at_s: float | None = None
        #: For ended rings: when the writer ended, CLOCK_MONOTONIC ns (the newest are kept).
        self.ended_ns = 0
        #: Holds the live writer (-1: none, ask /proc on every read).
        self.pidfd = -1
        self.stall_version = -1
        self.typical_step_s = 0.0
        #: When (the source's clock) this source found the writer gone, whether or not it saw it run.
        self.found_dead_at_s = 0.0
        #: When (the source's clock) the ring was last polled, and its write index then (None: never).
        self.polled_at: tuple[float, int] | None = None

    def awaits_launch_exit(self, now_s: float) -> bool:
        """Ended, started by `xfertop run`, and its launcher has not recorded how the command ended yet:
        the header is read on for LAUNCH_EXIT_GRACE_S."""
        return (
            bool(self.reader.header.launch_token)
            and self.reader.counters().launch_exit == 0
            and now_s - self.found_dead_at_s < LAUNCH_EXIT_GRACE_S
        )


class JobsSource(PollingSource[JobsState]):
    """``monotonic``: CLOCK_MONOTONIC seconds (time.monotonic), the clock of the clean-ups and of the grace
    period; a test passes a later time to age the rings."""

    name = "jobs"

    def __init__(
        self,
        interval_s: float = 0.1,
        ring_dir: str | None = None,
        stall_after_s: float = 5.0,
        finished_grace_s: float = ENDED_GRACE_S,
        monotonic: Callable[[], float] = time.monotonic,
        launch_token: str | None = None,
    ) -> None:
        super().__init__(interval_s)
        #: Where this viewer's own environment puts rings (JobsState.ring_dir) ...
        self.ring_dir = ring_dir or wire.ring_dir_path()
        #: ... and every directory read: without XFERTOP_DIR, also the other default places, because a
        #: job started from cron, a container or another session may not share our XDG_RUNTIME_DIR.
        self.ring_dirs = [ring_dir] if ring_dir else wire.ring_dir_candidates()
        self.stall_after_s = stall_after_s
        self.finished_grace_s = finished_grace_s
        self._monotonic = monotonic
        #: Show only the rings of the `xfertop run` with this token (its end-of-run summary); None: all.
        self.launch_token = launch_token
        self._uid = os.getuid()
        self._rings: dict[str, _Ring] = {}
        #: Ended rings beyond MAX_ENDED_RINGS, not read again while the same file is there: path -> inode.
        self._passed_over: dict[str, tuple[int, int]] = {}
        self._listings: dict[str, _Listing] = {}
        #: Ring directory -> (its identity when it passed check_ring_dir, when to walk again).
        self._dir_checks: dict[str, tuple[tuple[int, int, int, int], float]] = {}
        self._next_cleanup_s: float | None = None
        self._pidfds = select.poll()
        self._pidfd_count = 0
        self._exited_pidfds: set[int] = set()
        #: False once the kernel (or a sandbox) refused a pidfd: then /proc is asked on every read.
        self._pidfds_work = hasattr(os, "pidfd_open")
        self._probes = ProbeShelf()
        #: The largest share of a ring's slots written per second, over the rings of the last read.
        self._fill_per_s = 0.0
        self._filling = 0.0

    def next_interval_s(self) -> float:
        """The interval, or less where the last read found a ring filling so fast that the next read at
        the interval would find more than FILL_SHARE_PER_READ of it new."""
        interval = self._interval_s
        fill_per_s = self._fill_per_s
        if fill_per_s * interval <= FILL_SHARE_PER_READ:
            return interval
        return max(FILL_SHARE_PER_READ / fill_per_s, READ_FLOOR_S)

    def sample(self) -> JobsState:
        problems: list[str] = []
        ranks: list[RankState] = []
        seen: set[str] = set()
        error = None
        self._clean_up_if_due()
        # One poll for every live writer: the pidfds that turned readable belong to exited processes.
        self._exited_pidfds = {fd for fd, _ in self._pidfds.poll(0)} if self._pidfd_count else set()
        for ring_dir in self.ring_dirs:
            trouble = self._scan(ring_dir, ranks, problems, seen)
            if trouble and ring_dir == self.ring_dir:
                error = trouble
            elif trouble:
                problems.append(trouble)
        for path in set(self._rings) - seen:
            self._forget(path)
        for path in set(self._passed_over) - seen:
            del self._passed_over[path]
        if self._passed_over:
            problems.append(
                f"{len(self._passed_over)} more finished ranks are not shown: only the {MAX_ENDED_RINGS} "
                f"that ended last are kept (rings are removed {self.finished_grace_s:g} s after they end)"
            )
        self._fill_per_s, self._filling = self._filling, 0.0
        probes = self._probes.read(self.ring_dir)
        return JobsState(time.time(), _group(ranks), self.ring_dir, tuple(problems), error, probes)

    def _clean_up_if_due(self) -> None:
        """remove_ended_rings over every directory read, at the first read and every CLEANUP_PERIOD_S. Rings
        this source still believes alive, or saw die within the grace period, are kept: their last step
        may be long ago (a stalled job killed), but they ended only now."""
        now_s = self._monotonic()
        if self._next_cleanup_s is not None and now_s < self._next_cleanup_s:
            return
        self._next_cleanup_s = now_s + CLEANUP_PERIOD_S
        grace_s = self.finished_grace_s
        keep = {
            path
            for path, ring in self._rings.items()
            if not ring.dead or (ring.died_at_s is not None and now_s - ring.died_at_s < grace_s)
        }
        remove_ended_rings(self.ring_dirs, grace_s, now_monotonic_ns=int(now_s * 1e9), keep=keep)

    def _checked_ring_dir(self, ring_dir: str) -> os.stat_result:
        """wire.check_ring_dir, walked again every DIR_RECHECK_S or when the directory was replaced."""
        st = os.lstat(ring_dir)
        identity = (st.st_dev, st.st_ino, st.st_mode, st.st_uid)
        now_s = self._monotonic()
        checked = self._dir_checks.get(ring_dir)
        if checked is not None and checked[0] == identity and now_s < checked[1]:
            return st
        self._dir_checks.pop(ring_dir, None)
        st = wire.check_ring_dir(ring_dir)
        self._dir_checks[ring_dir] = ((st.st_dev, st.st_ino, st.st_mode, st.st_uid), now_s + DIR_RECHECK_S)
        return st

    def _scan(self, ring_dir: str, ranks: list[RankState], problems: list[str], seen: set[str]) -> str | None:
        """Read every ring in one directory; a sentence if the directory itself cannot be used."""
        try:
            st = self._checked_ring_dir(ring_dir)
            paths, unchanged = self._ring_paths(ring_dir, st)
        except wire.RingDirRefused as exc:
            return str(exc)
        except FileNotFoundError:
            self._listings.pop(ring_dir, None)
            return None  # no job has written here yet
        except OSError as exc:
            return f"cannot read ring directory {ring_dir}: {exc.strerror or exc}"
        for path in paths:
            seen.add(path)
            try:
                rank = self._read_one(path, problems, unchanged)
            except Exception as exc:  # one odd file must not hide the other jobs
                problems.append(f"{path}: could not be read ({type(exc).__name__}: {exc}); will retry")
                self._forget(path)
                continue
            if rank is not None:
                ranks.append(rank)
        return None

    def _ring_paths(self, ring_dir: str, st: os.stat_result) -> tuple[tuple[str, ...], bool]:
        """The ring files in ``ring_dir`` (lstat ``st``), and whether the names are known to name the very
        files of the last read: the directory's mtime is unchanged since a settled listing."""
        stamp = (st.st_dev, st.st_ino, st.st_mtime_ns)
        listing = self._listings.get(ring_dir)
        if listing is not None and listing.stamp == stamp and listing.settled:
            return listing.paths, True
        listed_at_ns = time.time_ns()
        paths = tuple(
            os.path.join(ring_dir, name)
            for name in sorted(os.listdir(ring_dir))
            if name.endswith(wire.RING_SUFFIX)
        )
        self._listings[ring_dir] = _Listing(stamp, paths, listed_at_ns - st.st_mtime_ns > LISTING_SETTLED_NS)
        return paths, False

    def _read_one(self, path: str, problems: list[str], unchanged: bool) -> RankState | None:
        ring = self._ring_for(path, problems, unchanged)
        if ring is None:
            return None
        reader = ring.reader
        if self.launch_token is not None and reader.header.launch_token != self.launch_token:
            return None
        if not ring.frozen:
            # Asked before the poll: a writer found gone has written all it ever will, and this poll reads it.
            was_dead = ring.dead
            if not self._alive(ring) and not was_dead and not self._keep_ended(path, ring):
                return None
            reader.poll()
            counters = reader.counters()
            self._note_fill(ring, counters.write_index)
            done = reader.caught_up() or reader.damage
            if ring.dead and done and not ring.awaits_launch_exit(self._monotonic()):
                ring.frozen = True
                reader.release()
        else:
            counters = reader.counters()
        if reader.damage:
            problems.append(reader.damage)
        status = self._status(ring, counters, not ring.dead)
        return _rank_state(reader, ring.job_key, reader.device(), counters, status)

    def _note_fill(self, ring: _Ring, write_index: int) -> None:
        """Keep the fastest rate at which a ring's slots were written since its last poll (next_interval_s):
        its write index counts every step written, read or overwritten."""
        now_s = self._monotonic()
        if ring.polled_at is not None and now_s > ring.polled_at[0]:
            then_s, then_index = ring.polled_at
            share_per_s = (write_index - then_index) / ring.reader.header.capacity / (now_s - then_s)
            self._filling = max(self._filling, share_per_s)
        ring.polled_at = (now_s, write_index)

    def _alive(self, ring: _Ring) -> bool:
        """process_alive for the ring's writer, asking /proc only when its pidfd (if any) says it exited."""
        if ring.dead:
            return False
        if ring.pidfd >= 0 and ring.pidfd not in self._exited_pidfds:
            return True  # not exited: the pidfd holds the very process the check below found
        header = ring.reader.header
        pidfd = self._open_pidfd(header.pid) if ring.pidfd < 0 else -1
        # Opened before the check: if the pid then shows the writer's start time, the pidfd is the writer.
        if process_alive(header.pid, header.start_ticks):
            if pidfd >= 0:
                ring.pidfd = pidfd
                self._pidfds.register(pidfd, select.POLLIN)
                self._pidfd_count += 1
            ring.seen_alive = True
            return True
        if pidfd >= 0:
            os.close(pidfd)
        ring.dead = True
        self._drop_pidfd(ring)
        self._note_end(ring)
        return False

    def _note_end(self, ring: _Ring) -> None:
        now_s = self._monotonic()
        ring.found_dead_at_s = now_s
        if ring.seen_alive:
            ring.died_at_s = now_s
            ring.ended_ns = time.monotonic_ns()
        else:
            header = ring.reader.header
            ring.ended_ns = last_sign_of_life_ns(
                ring.reader.counters().heartbeat_ns,
                header.created_unix_ns,
                time.monotonic_ns(),
                time.time_ns(),
            )

    def _keep_ended(self, path: str, ring: _Ring) -> bool:
        """Room for this newly ended ring among the MAX_ENDED_RINGS kept, made by passing over the ring that
        ended first (this one, if it did)."""
        ended = [
            (other.ended_ns, other_path)
            for other_path, other in self._rings.items()
            if other.dead and other_path != path
        ]
        if len(ended) < MAX_ENDED_RINGS:
            return True
        first_ns, first_path = min(ended)
        if ring.ended_ns <= first_ns:
            first_path = path
        self._passed_over[first_path] = self._rings[first_path].reader.identity
        self._forget(first_path)
        return first_path != path

    def _open_pidfd(self, pid: int) -> int:
        """A pidfd for ``pid`` (readable once that process exits), or -1."""
        if not self._pidfds_work:
            return -1
        try:
            return os.pidfd_open(pid)
        except ProcessLookupError:
            return -1
        except OSError as exc:  # ENOSYS (kernel before 5.3), EPERM (a seccomp filter)...
            # ... but out of descriptors is for now: /proc answers for this writer meanwhile.
            self._pidfds_work = exc.errno in _OUT_OF_DESCRIPTORS
            return -1

    def _drop_pidfd(self, ring: _Ring) -> None:
        if ring.pidfd >= 0:
            self._pidfds.unregister(ring.pidfd)
            self._pidfd_count -= 1
            os.close(ring.pidfd)
            ring.pidfd = -1

    def _ring_for(self, path: str, problems: list[str], unchanged: bool) -> _Ring | None:
        ring = self._rings.get(path)
        if unchanged and (path in self._passed_over or (ring is not None and ring.frozen)):
            return ring  # the directory still names this very file; nothing of it is read again
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            self._forget(path)
            return None
        if ring is not None and ring.reader.still_valid(st):
            return ring
        if ring is not None:
            self._forget(path)  # replaced, or shrunk under the mapping
        if path in self._passed_over:
            if self._passed_over[path] == (st.st_dev, st.st_ino):
                return None
            del self._passed_over[path]
        try:
            reader = RingReader(path, self._uid)
        except RingProblem as exc:
            cause = exc.__cause__
            young = time.time() - st.st_mtime < NOT_READY_GRACE_S
            if not (isinstance(cause, wire.RingNotReadyError) and young):
                problems.append(str(exc))
            return None
        except OSError as exc:
            hint = ": raise the limit on open files (ulimit -n)" if exc.errno in _OUT_OF_DESCRIPTORS else ""
            problems.append(f"{path}: cannot open: {exc.strerror or exc}{hint}")
            return None
        ring = _Ring(reader)
        self._rings[path] = ring
        return ring

    def _status(self, ring: _Ring, counters: RingCounters, alive: bool) -> RankStatus:
        if not alive or counters.state_flags & wire.STATE_CLOSED:
            return "finished"
        if _heartbeat_age_s(ring.reader, counters) > self._stall_threshold_s(ring):
            return "stalled"
        return "live"

    def _stall_threshold_s(self, ring: _Ring) -> float:
        reader = ring.reader
        if ring.stall_version != reader.steps_version:
            recent = [record.wall_ms for record in itertools.islice(reversed(reader.steps), 16)]
            ring.typical_step_s = statistics.median(recent) / 1000 if recent else 0.0
            ring.stall_version = reader.steps_version
        return max(self.stall_after_s, 5 * ring.typical_step_s)

    def _forget(self, path: str) -> None:
        ring = self._rings.pop(path, None)
        if ring is not None:
            self._drop_pidfd(ring)
            ring.reader.close()

    def close(self) -> None:
        for path in list(self._rings):
            self._forget(path)
        self._passed_over.clear()


def _heartbeat_age_s(reader: RingReader, counters: RingCounters) -> float:
    if counters.heartbeat_ns <= 0:  # no step closed yet: count from the ring's creation
        return max(0.0, (time.time_ns() - reader.header.created_unix_ns) / 1e9)
    return max(0.0, (time.perf_counter_ns() - counters.heartbeat_ns) / 1e9)


def _rank_state(
    reader: RingReader, key: str, device: str, counters: RingCounters, status: RankStatus
) -> RankState:
    header = reader.header
    return RankState(
        pid=header.pid,
        host=header.host,
        rank=header.rank,
        local_rank=header.local_rank,
        world_size=header.world_size,
        job_key=key,
        device=device,
        argv=header.argv,
        status=status,
        heartbeat_age_s=_heartbeat_age_s(reader, counters),
        steps=reader.steps_tuple(),
        pinned_host_bytes=counters.pinned_bytes,
        dataloader_workers=counters.dataloader_workers,
        reporter_errors=counters.errors,
        reporter_disabled=bool(counters.state_flags & wire.STATE_DISABLED),
        copy_timing=bool(counters.state_flags & wire.STATE_COPY_TIMING),
        loader_off_thread=bool(counters.state_flags & wire.STATE_LOADER_OFF_THREAD),
        cpu_optimizer=bool(counters.state_flags & wire.STATE_CPU_OPTIMIZER),
        debug_switches=wire.debug_switches_of(counters.state_flags),
        busy_thread=counters.busy_thread,
        busy_thread_share=counters.busy_thread_permille / 1000,
        loop_pre_blocked_share=_share_of_permille(counters.loop_pre_blocked_permille),
        loop_post_blocked_share=_share_of_permille(counters.loop_post_blocked_permille),
        ring_path=reader.path,
        steps_lost=reader.steps_lost,
        gpu_steps_dropped=counters.gpu_steps_dropped,
        end=_rank_end(counters) if status == "finished" else None,
    )


def _rank_end(counters: RingCounters) -> RankEnd:
    exit_code, signal_number = wire.decode_launch_exit(counters.launch_exit)
    return RankEnd(bool(counters.state_flags & wire.STATE_CLOSED), exit_code, signal_number)


def _group(ranks: list[RankState]) -> tuple[JobState, ...]:
    by_key: dict[str, list[RankState]] = {}
    for rank in ranks:
        by_key.setdefault(rank.job_key, []).append(rank)
    jobs = []
    for key in sorted(by_key):
        members = sorted(by_key[key], key=lambda r: (r.rank is None, r.rank or 0, r.pid))
        jobs.append(JobState(job_key=key, name=job_name(members[0].argv), ranks=tuple(members)))
    return tuple(jobs)


def _share_of_permille(permille: int) -> float | None:
    return None if permille < 0 else min(permille, 1000) / 1000
