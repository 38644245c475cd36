"""One ring file as the viewer reads it: validated once, then polled for new and resolved steps.

Reads are lock-free and never block the writer: a record is kept only when its sequence word was
the same even value before and after the copy (see xfertop.wire). A step whose GPU fields were still
pending is read again on later polls until they are patched in or the slot is overwritten.
"""

from __future__ import annotations

import mmap
import os
import stat
from collections import deque
from dataclasses import dataclass

from xfertop import wire
from xfertop.model.jobs import StepRecord

NS_PER_MS = 1_000_000
#: Polls a slot may stay half-written before the reader gives up on it and reads on.
STUCK_POLLS = 3


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


def _ms(value_ns: int) -> float | None:
    return None if value_ns < 0 else value_ns / NS_PER_MS


def to_step_record(body: list[int]) -> StepRecord:
    flags = body[wire.R_FLAGS]
    copy_gpu_ms = compute_gpu_ms = gpu_idle_ms = None
    if flags & wire.F_GPU_RESOLVED:
        copy_gpu_ms = _ms(body[wire.R_COPY_GPU_NS])
        compute_gpu_ms = _ms(body[wire.R_COMPUTE_GPU_NS])
        gpu_idle_ms = _ms(body[wire.R_GPU_IDLE_NS])
    # Positional: a frozen dataclass built from keywords costs ~0.8 us more, times every step of every
    # rank. tests/sources/test_jobs_source.py checks each field lands where it belongs.
    return StepRecord(
        body[wire.R_STEP],
        body[wire.R_WALL_NS] / NS_PER_MS,
        body[wire.R_DATA_WAIT_NS] / NS_PER_MS,
        body[wire.R_COPY_CPU_NS] / NS_PER_MS,
        copy_gpu_ms,
        compute_gpu_ms,
        gpu_idle_ms,
        body[wire.R_H2D_BYTES],
        body[wire.R_SAMPLES],
        bool(flags & wire.F_PINNED),
        bool(flags & wire.F_PAGEABLE_NON_BLOCKING),
        body[wire.R_START_NS],
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


class RingReader:
    """An open, validated ring and the steps read from it so far (oldest first)."""

    def __init__(self, path: str, uid: int | None = None) -> None:
        self.path = path
        uid = os.getuid() if uid is None else uid
        fd, st = _open_checked(path, uid)
        self.identity = (st.st_dev, st.st_ino)
        self._fd = fd
        self._mapping: mmap.mmap | None = None
        self._words: memoryview | None = None
        try:
            if st.st_size < wire.HEADER_BYTES:
                raise RingProblem(f"{path}: truncated: {st.st_size} bytes, shorter than the header")
            if st.st_size % 8:
                raise RingProblem(f"{path}: truncated: {st.st_size} bytes, not whole 8-byte words")
            self._mapping = mmap.mmap(fd, st.st_size, mmap.MAP_SHARED, mmap.PROT_READ)
            self._words = memoryview(self._mapping).cast("q")
            try:
                self.header = wire.read_header(self._mapping, self._words, st.st_size)
            except wire.RingFormatError as exc:
                raise RingProblem(f"{path}: {exc}") from exc
            if self.header.uid != uid:
                raise RingProblem(f"{path}: header names uid {self.header.uid}, not you (uid {uid}); skipped")
        except BaseException:
            self.close()
            raise
        self._size_bytes = st.st_size
        self.steps: deque[StepRecord] = deque(maxlen=self.header.capacity)
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

    def still_valid(self) -> bool:
        """False if the file shrank under us (reading the mapping would fault) or was replaced."""
        try:
            st = os.fstat(self._fd)
        except OSError:
            return False
        return st.st_size >= self._size_bytes

    def counters(self) -> RingCounters:
        words = self._words
        assert words is not None
        pinned = words[wire.H_PINNED_BYTES]
        workers = words[wire.H_WORKERS]
        return RingCounters(
            heartbeat_ns=words[wire.H_HEARTBEAT_NS],
            write_index=words[wire.H_WRITE_INDEX],
            errors=words[wire.H_ERRORS],
            state_flags=words[wire.H_STATE_FLAGS],
            pinned_bytes=None if pinned < 0 else pinned,
            dataloader_workers=None if workers < 0 else workers,
            gpu_steps_dropped=words[wire.H_GPU_DROPPED],
        )

    def device(self) -> str:
        """Written when the reporter learns its device, after the header: looked at on every poll, decoded
        only when its bytes changed."""
        assert self._mapping is not None
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
        assert words is not None
        return self._next_step >= words[wire.H_WRITE_INDEX]

    def poll(self) -> int:
        """Read steps written since the last poll and re-read pending ones; returns the new-step count."""
        words = self._words
        assert words is not None
        capacity = self.header.capacity
        write_index = words[wire.H_WRITE_INDEX]
        # The oldest step still held shares its slot with the step being written next: skip it.
        oldest_safe = max(0, write_index - capacity + 1)
        if self._next_step < 0 or write_index < self._next_step:
            self._next_step = oldest_safe  # a late viewer still gets the history
        if write_index == self._next_step and not self._pending:
            return 0  # nothing new and nothing to re-read: the common case between two steps
        self._reread_pending(words, capacity)
        if self._next_step < oldest_safe:
            self.steps_lost += oldest_safe - self._next_step
            self._next_step = oldest_safe
        added = 0
        first = self._next_step
        bodies = wire.read_records(words, capacity, first, write_index - first)
        for step, bulk_body in enumerate(bodies, start=first):
            body = bulk_body if bulk_body is not None else wire.read_record(words, capacity, step)
            if body is None:
                if _overwritten(words, capacity, step) or self._stuck_at(step):
                    self.steps_lost += 1
                    self._next_step = step + 1
                    continue
                break  # being written right now: read it next poll
            record = to_step_record(body)
            if body[wire.R_FLAGS] & wire.F_GPU_PENDING:
                self._pending.append(step)
            self.steps.append(record)
            self._next_step = step + 1
            added += 1
        if added:
            self.steps_version += 1
        return added

    def _stuck_at(self, step: int) -> bool:
        """A slot a writer holds for microseconds, still unreadable after a few polls: it died writing it."""
        if step != self._stuck_step:
            self._stuck_step, self._stuck_polls = step, 0
        self._stuck_polls += 1
        return self._stuck_polls > STUCK_POLLS

    def _reread_pending(self, words: memoryview, capacity: int) -> None:
        if not self._pending:
            return
        still: list[int] = []
        for step in self._pending:
            body = wire.read_record(words, capacity, step)
            if body is None:
                if not _overwritten(words, capacity, step):
                    still.append(step)
                continue
            if body[wire.R_FLAGS] & wire.F_GPU_PENDING:
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

    def close(self) -> None:
        if self._words is not None:
            self._words.release()
            self._words = None
        if self._mapping is not None:
            self._mapping.close()
            self._mapping = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _overwritten(words: memoryview, capacity: int, step: int) -> bool:
    """The slot of ``step`` now holds a later step (the writer lapped the reader)."""
    return words[wire.slot_word(capacity, step) + wire.R_STEP] > step
