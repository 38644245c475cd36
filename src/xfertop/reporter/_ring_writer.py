"""The reporter's end of the wire: a private ring file, mmap-ed, written with plain memory stores.

Creating the file costs a few syscalls once; each step afterwards is stores into the mapping only:
no syscall, no lock, nothing that waits for a reader.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import stat
import struct

from xfertop import wire
from xfertop.wire import RingIdentity

_BODY = struct.Struct("<12q")  # every record word after the sequence word
_pack_body = _BODY.pack_into
# Per step, module constants rather than lookups on ``wire``: the record write is on every step's path.
_FIRST_RECORD_WORD = wire.HEADER_BYTES // 8
_RECORD_WORDS = wire.RECORD_WORDS
_H_WRITE_INDEX = wire.H_WRITE_INDEX
_H_HEARTBEAT_NS = wire.H_HEARTBEAT_NS


class RingDirError(Exception):
    """The ring directory cannot be used safely; the message is a sentence for the user."""


def open_private_dir(path: str) -> int:
    """Open the ring directory, creating it (and any missing parent) 0700 first; refuse it with a
    RingDirError sentence when it, or a directory above it, is unsafe (wire.check_ring_dir)."""
    try:
        _make_missing_dirs(path)
        st = wire.check_ring_dir(path)
        dir_fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except wire.RingDirRefused as exc:
        raise RingDirError(str(exc)) from exc
    except OSError as exc:
        raise RingDirError(f"cannot create ring directory {path}: {exc.strerror or exc}") from exc
    fst = os.fstat(dir_fd)
    if (fst.st_dev, fst.st_ino) != (st.st_dev, st.st_ino):
        os.close(dir_fd)
        raise RingDirError(f"ring directory {path} was replaced while it was checked; refusing to use it")
    if stat.S_IMODE(fst.st_mode) & 0o077:
        os.fchmod(dir_fd, 0o700)  # ours, but readable by others: make it private
    return dir_fd


def _make_missing_dirs(path: str) -> None:
    """mkdir 0700 of ``path`` and of its missing parents (never 0755 by the umask, as os.makedirs would),
    once the directories above them passed the checks: nothing is created through another user's link."""
    missing = []
    head = os.path.abspath(path)
    while not os.path.lexists(head):
        missing.append(head)
        head = os.path.dirname(head)
    if missing:
        wire.check_dirs_above(path, head)
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(directory, 0o700)


def _create_file(dir_fd: int, name: str, size_bytes: int) -> tuple[int, str]:
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for attempt in range(100):
        candidate = name if attempt == 0 else f"{name[: -len(wire.RING_SUFFIX)]}.{attempt}{wire.RING_SUFFIX}"
        try:
            fd = os.open(candidate, flags, 0o600, dir_fd=dir_fd)
        except FileExistsError:
            continue
        try:
            os.fchmod(fd, 0o600)
            # Real zeros, not a sparse hole: a full tmpfs then fails here, not with SIGBUS mid-training.
            zeros = memoryview(bytes(size_bytes))
            while zeros:
                zeros = zeros[os.write(fd, zeros) :]
        except OSError:
            os.close(fd)
            os.unlink(candidate, dir_fd=dir_fd)
            raise
        return fd, candidate
    raise FileExistsError(f"no free ring file name for {name}")


class RingWriter:
    def __init__(self, dir_path: str, identity: RingIdentity, capacity: int = wire.DEFAULT_CAPACITY) -> None:
        self.dir_path = dir_path
        self.capacity = capacity
        self._identity = identity
        self._name = f"pid{identity.pid}-{identity.start_ticks}{wire.RING_SUFFIX}"
        self._fd = -1
        self.path = ""
        self._map, self.words = self._open_new(copy_from=None)

    def _open_new(self, copy_from: mmap.mmap | None) -> tuple[mmap.mmap, memoryview]:
        size = wire.ring_bytes(self.capacity)
        dir_fd = open_private_dir(self.dir_path)
        try:
            fd, name = _create_file(dir_fd, self._name, size)
        except OSError as exc:  # a full or read-only directory: say which
            raise RingDirError(f"cannot write a ring in {self.dir_path}: {exc.strerror or exc}") from exc
        finally:
            os.close(dir_fd)
        mapping = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        words = memoryview(mapping).cast("q")
        if copy_from is None:
            wire.write_header(mapping, words, self._identity, self.capacity)
        else:
            mapping[8:size] = copy_from[8:size]
            mapping[0:8] = wire.MAGIC
        if self._fd >= 0:
            os.close(self._fd)
        self._fd = fd
        self.path = os.path.join(self.dir_path, name)
        return mapping, words

    # -- per step: memory stores only ----------------------------------------------------------------
    def write_step(
        self,
        step: int,
        start_ns: int,
        wall_ns: int,
        data_wait_ns: int,
        copy_cpu_ns: int,
        loop_pre_ns: int,
        sync_ns: int,
        gpu_gap_ns: int,
        h2d_bytes: int,
        samples: int,
        flags: int,
        loop_post_ns: int,
    ) -> None:
        words = self.words
        base = _FIRST_RECORD_WORD + (step % self.capacity) * _RECORD_WORDS
        seq = words[base] | 1
        words[base] = seq  # odd: a reader skips the slot
        _pack_body(
            self._map,
            base * 8 + 8,
            step,
            start_ns,
            wall_ns,
            data_wait_ns,
            copy_cpu_ns,
            loop_pre_ns,
            sync_ns,
            gpu_gap_ns,
            h2d_bytes,
            samples,
            flags,
            loop_post_ns,
        )
        words[base] = seq + 1
        words[_H_WRITE_INDEX] = step + 1
        words[_H_HEARTBEAT_NS] = start_ns + wall_ns

    def patch_gpu(self, step: int, gpu_gap_ns: int, flags_set: int, flags_clear: int) -> None:
        self._patch(step, wire.R_GPU_GAP_NS, gpu_gap_ns, flags_set, flags_clear)

    def patch_periodic(self, step: int, periodic_gpu_ns: int) -> None:
        """Step ``step``'s pass or checkpoint took ``periodic_gpu_ns`` on the GPU: pending no more."""
        self._patch(
            step, wire.R_PERIODIC_GPU_NS, periodic_gpu_ns, wire.F_PERIODIC_TIMED, wire.F_PERIODIC_PENDING
        )

    def _patch(self, step: int, word: int, value: int, flags_set: int, flags_clear: int) -> None:
        """A written step's ``word`` and flags, changed under its slot's seqlock as a write is."""
        words = self.words
        base = wire.HEADER_BYTES // 8 + (step % self.capacity) * wire.RECORD_WORDS
        if words[base + wire.R_STEP] != step or words[base] & 1:
            return  # overwritten by a newer lap: nothing to patch
        seq = words[base] | 1
        words[base] = seq
        words[base + word] = value
        words[base + wire.R_FLAGS] = (words[base + wire.R_FLAGS] | flags_set) & ~flags_clear
        words[base] = seq + 1

    def set_word(self, index: int, value: int) -> None:
        self.words[index] = value

    def set_device(self, device: str) -> None:
        wire.set_device_string(self._map, device)

    def set_busy_thread(self, name: str, permille: int) -> None:
        """The busiest other Python thread (wire.H_BUSY_THREAD_PERMILLE): the name first, so a reader
        that sees the share sees its name."""
        wire.set_busy_thread_string(self._map, name)
        self.words[wire.H_BUSY_THREAD_PERMILLE] = permille

    # -- every few seconds ----------------------------------------------------------------------------
    def recreate_if_unlinked(self) -> bool:
        """If someone deleted the file (or its directory) under us, write a new one with the same content."""
        if os.fstat(self._fd).st_nlink > 0:
            return False
        old_map, old_words = self._map, self.words
        self._map, self.words = self._open_new(copy_from=old_map)
        old_words.release()
        old_map.close()
        return True

    def close(self) -> None:
        self.words[wire.H_STATE_FLAGS] = self.words[wire.H_STATE_FLAGS] | wire.STATE_CLOSED
