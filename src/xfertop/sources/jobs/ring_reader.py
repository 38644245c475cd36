"""One ring file as the viewer reads it: validated once, then polled for new and resolved steps; and the
removal of ring files whose writer has ended (``remove_ended_rings``, for every xfertop process).

Reads are lock-free and never block the writer: a record is kept only when its sequence word was
the same even value before and after the copy (see xfertop.wire). A step whose GPU fields were still
pending is read again on later polls until they are patched in or the slot is overwritten.

A reader holds no file descriptor of its own: the file is closed once mapped (Python before 3.13 keeps one
copy inside the mapping), and ``release()`` drops the mapping of a ring whose content is final, keeping
what was read as data. The work of one poll is bounded: at most ``MAX_STEPS_PER_POLL`` of the newest
records, and none while the write index runs ahead of the records (a damaged ring).
"""

from __future__ import annotations

import mmap
import os
import stat
import sys
import time
from collections import deque
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from xfertop import wire
from xfertop.model.jobs import StepRecord

NS_PER_MS = 1_000_000
#: Polls a slot may stay half-written before the reader gives up on it and reads on.
STUCK_POLLS = 3
#: The most records one poll copies out of a ring (the newest ones), and the most steps held per ring:
#: a damaged header claiming 2^20 slots costs what a healthy ring of this size costs.
MAX_STEPS_PER_POLL = 4096
#: Consecutive polls whose write index runs ahead of the records before the ring is called damaged.
DAMAGED_POLLS = 3
#: How long the ring of an ended writer stays after its last sign of life (a closed step, else its creation):
#: a viewer started that late still sees the job's last steps.
ENDED_GRACE_S = 60.0
_CLOCKS_APART_NS = 1_000_000_000


class RingProblem(Exception):
    """A file the viewer cannot use; the message is a sentence for JobsState.problems."""


@dataclass(frozen=True)
class RingCounters:
    heartbeat_ns: int
    write_index: int
    errors: int
    state_flags: int
    pinned_bytes: int | None
    dataloader_workers: int | None
    gpu_steps_dropped: int
    #: How the command of `xfertop run` ended, as its launcher recorded it (wire.decode_launch_exit).
    launch_exit: int = 0
    #: The busiest other Python thread of the job, where it used 30% of a core or more
    #: (wire.H_BUSY_THREAD_PERMILLE).
    busy_thread: str = ""
    busy_thread_permille: int = 0
    #: The blocked share of the loop's own work before the model and after the step, in permille, -1
    #: where not known (wire.H_LOOP_PRE_BLOCKED, H_LOOP_POST_BLOCKED).
    loop_pre_blocked_permille: int = -1
    loop_post_blocked_permille: int = -1


#: A step whose GPU figures are still to be patched in: read again until they are.
_PENDING = wire.F_GPU_PENDING | wire.F_PERIODIC_PENDING


def to_step_record(body: list[int]) -> StepRecord:
    flags = body[wire.R_FLAGS]
    gap = body[wire.R_GPU_GAP_NS]
    # Pending events leave the gap unknown (NO_VALUE) until they resolve; a gap of 0 is written at once.
    gpu_gap_ms = gap / NS_PER_MS if gap >= 0 and not flags & wire.F_GPU_PENDING else None
    # Positional: a frozen dataclass built from keywords costs ~0.8 us more, times every step of every
    # rank. tests/sources/test_jobs_source.py checks each field lands where it belongs.
    return StepRecord(
        body[wire.R_STEP],
        body[wire.R_WALL_NS] / NS_PER_MS,
        body[wire.R_DATA_WAIT_NS] / NS_PER_MS,
        body[wire.R_COPY_CPU_NS] / NS_PER_MS,
        body[wire.R_LOOP_PRE_NS] / NS_PER_MS,
        body[wire.R_SYNC_NS] / NS_PER_MS,
        body[wire.R_LOOP_POST_NS] / NS_PER_MS,
        gpu_gap_ms,
        body[wire.R_H2D_BYTES],
        body[wire.R_SAMPLES],
        bool(flags & wire.F_PINNED),
        bool(flags & wire.F_PAGEABLE_NON_BLOCKING),
        body[wire.R_START_NS],
        bool(flags & wire.F_COPIED),
        bool(flags & wire.F_EPOCH_START),
        bool(flags & wire.F_WORKERS_STARTED),
        bool(flags & wire.F_CHECKPOINT),
        bool(flags & wire.F_PARTITIONED),
        bool(flags & wire.F_SYNCED),
        bool(flags & wire.F_PROBE_REPLAY),
        wire.loader_workers_of(flags),
        None,  # between_before_ms: measured from the steps' starts
        bool(flags & wire.F_NESTED_PASS),
        body[wire.R_PERIODIC_GPU_NS] / NS_PER_MS if flags & wire.F_PERIODIC_TIMED else None,
        bool(flags & wire.F_OPTIMIZER_STEPPED),
    )


def _open_checked(path: str, uid: int) -> tuple[int, os.stat_result]:
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise RingProblem(f"{path} is a symbolic link; skipped (rings are never followed through links)")
    if not stat.S_ISREG(st.st_mode):
        raise RingProblem(f"{path} is not a regular file; skipped")
    if st.st_uid != uid:
        raise RingProblem(f"{path} belongs to uid {st.st_uid}, not to you (uid {uid}); skipped")
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    fst = os.fstat(fd)
    if (fst.st_dev, fst.st_ino) != (st.st_dev, st.st_ino):
        os.close(fd)
        raise RingProblem(f"{path} changed while it was opened; will retry")
    return fd, fst


def _map_read_only(fd: int, size_bytes: int) -> mmap.mmap:
    if sys.version_info >= (3, 13):  # the mapping then needs no descriptor of its own
        return mmap.mmap(fd, size_bytes, mmap.MAP_SHARED, mmap.PROT_READ, trackfd=False)
    return mmap.mmap(fd, size_bytes, mmap.MAP_SHARED, mmap.PROT_READ)


class RingReader:
    """A validated ring and the steps read from it so far (oldest first, at most ``MAX_STEPS_PER_POLL``)."""

    def __init__(self, path: str, uid: int | None = None) -> None:
        self.path = path
        uid = os.getuid() if uid is None else uid
        fd, st = _open_checked(path, uid)
        self.identity = (st.st_dev, st.st_ino)
        self._mapping: mmap.mmap | None = None
        self._words: memoryview | None = None
        self._counters: RingCounters | None = None
        try:
            if st.st_size < wire.HEADER_BYTES:
                raise RingProblem(f"{path}: truncated: {st.st_size} bytes, shorter than the header")
            if st.st_size % 8:
                raise RingProblem(f"{path}: truncated: {st.st_size} bytes, not whole 8-byte words")
            self._mapping = _map_read_only(fd, st.st_size)
            self._words = memoryview(self._mapping).cast("q")
            try:
                self.header = wire.read_header(self._mapping, self._words, st.st_size)
            except wire.RingFormatError as exc:
                raise RingProblem(f"{path}: {exc}") from exc
            if self.header.uid != uid:
                raise RingProblem(f"{path}: header names uid {self.header.uid}, not you (uid {uid}); skipped")
        except BaseException:
            self._unmap()  # nothing was read: release() would read the device from a half-made reader
            raise
        finally:
            os.close(fd)
        self._size_bytes = st.st_size
        self.steps: deque[StepRecord] = deque(maxlen=min(self.header.capacity, MAX_STEPS_PER_POLL))
        #: Bumped whenever ``steps`` changes (a step added, a pending one resolved): what was derived from
        #: the steps at one version (the tuple a RankState holds, a median) is still right at that version.
        self.steps_version = 0
        self._steps_tuple: tuple[StepRecord, ...] = ()
        self._steps_tuple_version = 0
        self._device_raw = b""
        self._device = ""
        self._next_step = -1
        self._pending: list[int] = []
        self.steps_lost = 0
        self._stuck_step = -1
        self._stuck_polls = 0
        self._damaged_polls = 0
        #: Why the ring's steps are not being read, as a sentence for JobsState.problems (None: they are).
        self.damage: str | None = None

    @property
    def mapped(self) -> bool:
        """Still read from the file; False once ``release()`` kept its last content as data."""
        return self._words is not None

    def still_valid(self, st: os.stat_result | None = None) -> bool:
        """False if the file at ``path`` (lstat ``st``, else looked up now) was removed or replaced, or
        shrank under the mapping (reading it would fault). A released ring only needs to be the same file."""
        if st is None:
            try:
                st = os.lstat(self.path)
            except OSError:
                return False
        if (st.st_dev, st.st_ino) != self.identity:
            return False
        return not self.mapped or st.st_size >= self._size_bytes

    def counters(self) -> RingCounters:
        """The header's counters as they are now (as they were last, once released)."""
        words = self._words
        if words is None:
            assert self._counters is not None, "released before it was ever read"
            return self._counters
        pinned = words[wire.H_PINNED_BYTES]
        workers = words[wire.H_WORKERS]
        busy = words[wire.H_BUSY_THREAD_PERMILLE]
        self._counters = RingCounters(
            heartbeat_ns=words[wire.H_HEARTBEAT_NS],
            write_index=words[wire.H_WRITE_INDEX],
            errors=words[wire.H_ERRORS],
            state_flags=words[wire.H_STATE_FLAGS],
            pinned_bytes=None if pinned < 0 else pinned,
            dataloader_workers=None if workers < 0 else workers,
            gpu_steps_dropped=words[wire.H_GPU_DROPPED],
            launch_exit=words[wire.H_LAUNCH_EXIT],
            busy_thread=self._busy_thread_name() if busy > 0 else "",
            busy_thread_permille=max(busy, 0),
            loop_pre_blocked_permille=words[wire.H_LOOP_PRE_BLOCKED] - 1,
            loop_post_blocked_permille=words[wire.H_LOOP_POST_BLOCKED] - 1,
        )
        return self._counters

    def _busy_thread_name(self) -> str:
        try:
            return wire.read_string(self._mapping, "busy_thread") if self._mapping is not None else ""
        except wire.RingFormatError:
            return ""

    def device(self) -> str:
        """Written when the reporter learns its device, after the header: looked at on every poll, decoded
        only when its bytes changed."""
        if self._mapping is None:
            return self._device
        offset, length = wire.STRINGS["device"]
        raw = self._mapping[offset : offset + length]
        if raw != self._device_raw:
            try:
                self._device = wire.read_string(self._mapping, "device")
            except wire.RingFormatError:
                self._device = ""
            self._device_raw = raw
        return self._device

    def steps_tuple(self) -> tuple[StepRecord, ...]:
        """``tuple(self.steps)``, built again only after the steps changed."""
        if self._steps_tuple_version != self.steps_version:
            self._steps_tuple = tuple(self.steps)
            self._steps_tuple_version = self.steps_version
        return self._steps_tuple

    def caught_up(self) -> bool:
        """Every step the writer announced has been read or given up (none is being waited for)."""
        words = self._words
        return words is None or self._next_step >= words[wire.H_WRITE_INDEX]

    def poll(self) -> int:
        """Read steps written since the last poll and re-read pending ones; returns the new-step count."""
        words = self._words
        if words is None:
            return 0
        capacity = self.header.capacity
        write_index = words[wire.H_WRITE_INDEX]
        if not self._write_index_believable(words, capacity, write_index):
            return 0
        # The oldest step still held shares its slot with the step being written next: skip it. Older steps
        # than one poll's worth are not read either (a late viewer gets the newest history).
        oldest_read = max(0, write_index - capacity + 1, write_index - MAX_STEPS_PER_POLL)
        if self._next_step < 0 or write_index < self._next_step:
            self._next_step = oldest_read
        if write_index == self._next_step and not self._pending:
            return 0  # nothing new and nothing to re-read: the common case between two steps
        self._reread_pending(words, capacity)
        if self._next_step < oldest_read:
            self.steps_lost += oldest_read - self._next_step
            self._next_step = oldest_read
        added = 0
        giving_up = False
        first = self._next_step
        bodies = wire.read_records(words, capacity, first, write_index - first)
        for step, bulk_body in enumerate(bodies, start=first):
            body = bulk_body if bulk_body is not None else wire.read_record(words, capacity, step)
            if body is None:
                if not giving_up and not _overwritten(words, capacity, step):
                    if not self._stuck_at(step):
                        break  # being written right now: read it next poll
                    giving_up = True  # and on every unreadable slot after it in this poll
                self.steps_lost += 1
                self._next_step = step + 1
                continue
            record = to_step_record(body)
            if body[wire.R_FLAGS] & _PENDING:
                self._pending.append(step)
            self.steps.append(record)
            self._next_step = step + 1
            added += 1
        if added:
            self.steps_version += 1
        return added

    def _write_index_believable(self, words: memoryview, capacity: int, write_index: int) -> bool:
        """The newest step the write index announces is in its slot (O(1)); after DAMAGED_POLLS polls that
        say otherwise, ``damage`` says why and the ring is not read until it is consistent again."""
        trouble = _write_index_trouble(words, capacity, write_index)
        if trouble is None:
            self._damaged_polls, self.damage = 0, None
            return True
        self._damaged_polls += 1
        if self._damaged_polls >= DAMAGED_POLLS:
            self.damage = f"{self.path}: damaged: {trouble}; its steps are not read while it stays so"
        return False

    def _stuck_at(self, step: int) -> bool:
        """A slot a writer holds for microseconds, still unreadable after a few polls: it died writing it."""
        if step != self._stuck_step:
            self._stuck_step, self._stuck_polls = step, 0
        self._stuck_polls += 1
        return self._stuck_polls > STUCK_POLLS

    def _reread_pending(self, words: memoryview, capacity: int) -> None:
        if not self._pending:
            return
        oldest_held = self.steps[0].step if self.steps else 0
        still: list[int] = []
        for step in self._pending:
            if step < oldest_held:
                continue  # no longer held: nothing to patch
            body = wire.read_record(words, capacity, step)
            if body is None:
                if not _overwritten(words, capacity, step):
                    still.append(step)
                continue
            if body[wire.R_FLAGS] & _PENDING:
                still.append(step)
                continue
            self._replace(step, to_step_record(body))
        self._pending = still

    def _replace(self, step: int, record: StepRecord) -> None:
        steps = self.steps
        for position in range(len(steps) - 1, -1, -1):  # pending steps are near the newest end
            held = steps[position].step
            if held == step:
                steps[position] = record
                self.steps_version += 1
                return
            if held < step:
                return

    def release(self) -> None:
        """Drop the mapping; the header, steps, counters and device read so far stay (the content of a ring
        whose writer has ended is final: read once more, then kept as data)."""
        if self._words is not None:
            if self._counters is None:
                self.counters()
            self.device()  # last read from the mapping: a ring first seen after its end has one too
        self._unmap()
        self._pending = []

    def _unmap(self) -> None:
        if self._words is not None:
            self._words.release()
            self._words = None
        if self._mapping is not None:
            self._mapping.close()
            self._mapping = None

    def close(self) -> None:
        self.release()


def _write_index_trouble(words: memoryview, capacity: int, write_index: int) -> str | None:
    """Why the write index cannot be right, or None. The writer stores a step's record before the write index
    that announces it, so the slot of step ``write_index - 1`` holds that step, unless the writer has lapped
    it since (a later step, at most the write index now) or is writing it right now (an odd sequence word)."""
    if write_index < 0:
        return f"its write index is negative ({write_index})"
    if write_index == 0:
        return None
    newest = write_index - 1
    base = wire.slot_word(capacity, newest)
    if words[base + wire.R_SEQ] & 1:
        return None
    held = words[base + wire.R_STEP]
    if held == newest or newest < held <= words[wire.H_WRITE_INDEX]:
        return None
    return (
        f"its write index says {write_index} steps were written, but the slot of step {newest} holds "
        f"step {held} (capacity {capacity})"
    )


def _overwritten(words: memoryview, capacity: int, step: int) -> bool:
    """The slot of ``step`` now holds a later step (the writer lapped the reader)."""
    return words[wire.slot_word(capacity, step) + wire.R_STEP] > step


def process_alive(pid: int, start_ticks: int) -> bool:
    """The process that wrote the ring still runs (same pid and same start time: no pid reuse)."""
    try:
        return wire.process_start_ticks(pid) == start_ticks
    except (OSError, ValueError, IndexError):
        return False


def last_sign_of_life_ns(
    heartbeat_ns: int, created_unix_ns: int, now_monotonic_ns: int, now_unix_ns: int
) -> int:
    """When a ring's writer last showed it was alive, on the CLOCK_MONOTONIC of this boot: its last closed
    step (the heartbeat), else the ring's creation. A heartbeat well ahead of the clock was written before
    the machine last booted: that counts as long ago (one just ahead: a clock read a moment early)."""
    if heartbeat_ns > now_monotonic_ns + _CLOCKS_APART_NS:
        return -(1 << 62)
    if heartbeat_ns > 0:
        return min(heartbeat_ns, now_monotonic_ns)
    return now_monotonic_ns - (now_unix_ns - created_unix_ns)


def remove_ended_rings(
    ring_dirs: Iterable[str] | None = None,
    grace_s: float = ENDED_GRACE_S,
    *,
    now_monotonic_ns: int | None = None,
    keep: Collection[str] = (),
) -> int:
    """Remove the ring files whose writer has ended and showed no sign of life for ``grace_s``.

    Ended: its pid is gone, or now names a process that started at another time. ``ring_dirs``: where to
    look (default: every place a job of this user may write, wire.ring_dir_candidates()); a directory that
    fails wire.check_ring_dir is left alone. Only regular files of yours whose header this viewer reads are
    judged, and only the very file judged is removed; ``keep`` names ring paths to leave. Every xfertop
    process calls this (the live view, ``--once``, ``xfertop run``); it never raises for a file or directory
    it cannot read. Returns how many files it removed.
    """
    uid = os.getuid()
    now_ns = time.monotonic_ns() if now_monotonic_ns is None else now_monotonic_ns
    older_than_ns = now_ns - int(grace_s * 1e9)
    removed = 0
    for ring_dir in wire.ring_dir_candidates() if ring_dirs is None else ring_dirs:
        try:
            wire.check_ring_dir(ring_dir)
            names = sorted(os.listdir(ring_dir))
        except (OSError, wire.RingDirRefused):
            continue
        for name in names:
            path = os.path.join(ring_dir, name)
            if name.endswith(wire.RING_SUFFIX) and path not in keep:
                removed += _remove_if_ended(path, uid, older_than_ns, now_ns)
    return removed


def _remove_if_ended(path: str, uid: int, older_than_ns: int, now_ns: int) -> bool:
    try:
        fd, st = _open_checked(path, uid)
    except (OSError, RingProblem):
        return False
    try:
        header = os.pread(fd, wire.HEADER_BYTES, 0)
    except OSError:
        return False
    finally:
        os.close(fd)
    words = memoryview(header).cast("q") if len(header) == wire.HEADER_BYTES else None
    # The words read below mean what version 1 says only in a complete header of this format.
    if (
        words is None
        or header[:8] != wire.MAGIC
        or words[wire.H_VERSION] != wire.VERSION
        or words[wire.H_BYTE_ORDER] != wire.BYTE_ORDER_MARK
        or words[wire.H_UID] != uid
    ):
        return False
    if process_alive(words[wire.H_PID], words[wire.H_START_TICKS]):
        return False
    last_ns = last_sign_of_life_ns(
        words[wire.H_HEARTBEAT_NS], words[wire.H_CREATED_UNIX_NS], now_ns, time.time_ns()
    )
    if last_ns > older_than_ns:
        return False
    try:
        now = os.lstat(path)
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino) or now.st_uid != uid:
            return False  # replaced since it was read: not the file judged
        os.unlink(path)
    except OSError:
        return False
    return True
