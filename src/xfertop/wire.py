"""The ring wire format: owned here, imported by both the reporter and the viewer.

One file per training process: a 4 KiB header, then ``capacity`` fixed-size step records. Every
numeric field is a native little-endian int64 in an 8-byte aligned slot, so each field is written and
read with one aligned 8-byte memory access (through ``memoryview.cast("q")``) and can never tear.
A record is guarded by a per-slot sequence word (a seqlock): the writer makes it odd, writes the body,
then makes it even; a reader keeps a record only if it saw the same even word before and after.
Strings (host, run id, argv...) are written once before the magic, which is written last.
See docs/ring-format.md.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from xfertop.procfs import split_stat

MAGIC = b"XFERTOP\x00"
VERSION = 2
BYTE_ORDER_MARK = 0x0102030405060708
HEADER_BYTES = 4096
RECORD_WORDS = 16
RECORD_BYTES = RECORD_WORDS * 8
DEFAULT_CAPACITY = 1024
MAX_CAPACITY = 1 << 20
RING_SUFFIX = ".ring"

# -- header: int64 word indexes ------------------------------------------------------------------
# Word 0 is the magic (8 bytes), word 1 the version; both are checked before anything else is read.
H_MAGIC, H_VERSION, H_BYTE_ORDER, H_HEADER_BYTES, H_RECORD_BYTES, H_CAPACITY = 0, 1, 2, 3, 4, 5
H_UID, H_PID, H_PPID, H_START_TICKS, H_CREATED_UNIX_NS = 6, 7, 8, 9, 10
H_RANK, H_LOCAL_RANK, H_WORLD_SIZE = 11, 12, 13
# Mutable words, each written alone by the reporter (one aligned store each).
H_HEARTBEAT_NS, H_WRITE_INDEX, H_ERRORS, H_STATE_FLAGS = 32, 33, 34, 35
H_PINNED_BYTES, H_PINNED_ACTIVE_BYTES, H_WORKERS, H_GPU_DROPPED = 36, 37, 38, 39
#: Written by `xfertop run` (not by the reporter) once the command it started has ended: how it ended,
#: ``encode_launch_exit``; 0 (the zeroed header of every ring, old ones included) = nothing recorded.
H_LAUNCH_EXIT = 40
#: The busiest Python thread of the job's own other than the training loop's (and the main thread), where
#: it used at least 30% of a core over the reporter's last second: its CPU in permille of a core (its name in
#: the "busy_thread" string); 0 otherwise. Python threads take turns on one GIL: a busy one holds the
#: loop's own Python back.
H_BUSY_THREAD_PERMILLE = 41
#: The share of the loop's own work before the model (42) and after the step (43) in which its thread was
#: blocked (neither on a CPU nor waiting for one: a queue's get(), a sleep, a read, an fsync), over recent
#: sampled steps, in permille, plus one; 0: not known (too little sampled, no schedstat).
#: reporter/_ready_clock.py.
H_LOOP_PRE_BLOCKED, H_LOOP_POST_BLOCKED = 42, 43

# Header state flags.
STATE_DISABLED = 1
STATE_CLOSED = 2
STATE_COPY_TIMING = 4  # `xfertop run` times Tensor.to/.cuda: a step without copies really copied nothing
#: A watched loader is read on a thread other than the main one (the job's own prefetcher): the step
#: clock's waits are that thread's, not the training loop's.
STATE_LOADER_OFF_THREAD = 8
#: Debugging switches the training process runs with, each a known slowdown of every step (the reporter
#: reads them once a second; the flag clears when the switch is turned off): autograd's anomaly detection,
#: a torch profiler recording, a Python tracer on the loop's thread (a debugger, coverage), and the CUDA
#: environment variables CUDA_LAUNCH_BLOCKING=1 and PYTORCH_NO_CUDA_MEMORY_CACHING=1.
STATE_ANOMALY_DETECTION = 16
STATE_PROFILER = 32
STATE_TRACED = 64
STATE_LAUNCH_BLOCKING = 128
STATE_NO_CACHING_ALLOCATOR = 256
#: The job's optimizers step mostly host memory (half their parameter bytes or more: a hand-made CPU
#: offload, FSDP's or DeepSpeed's optimizer offload; any CPU job): their step is host arithmetic, not
#: kernel launches. Weighed at each optimizer's first step.
STATE_CPU_OPTIMIZER = 512
#: torch.cuda.empty_cache() called in at least a third of the steps (`xfertop run` watches it; the reporter
#: judges once a second): the caching allocator's blocks go back to the driver each step, as with the
#: variable above.
STATE_EMPTY_CACHE_EVERY_STEP = 1024
DEBUG_SWITCHES: dict[int, str] = {
    STATE_ANOMALY_DETECTION: "anomaly_detection",
    STATE_PROFILER: "profiler",
    STATE_TRACED: "python_tracer",
    STATE_LAUNCH_BLOCKING: "cuda_launch_blocking",
    STATE_NO_CACHING_ALLOCATOR: "no_cuda_caching_allocator",
    STATE_EMPTY_CACHE_EVERY_STEP: "empty_cache_every_step",
}
STATE_DEBUG_SWITCHES = sum(DEBUG_SWITCHES)


def debug_switches_of(state_flags: int) -> tuple[str, ...]:
    """The names of the debugging switches that header state flags carry (DEBUG_SWITCHES' order)."""
    return tuple(name for flag, name in DEBUG_SWITCHES.items() if state_flags & flag)


# -- header strings: (byte offset, byte length); a 4-byte little-endian length, then UTF-8 ------------
STRINGS: dict[str, tuple[int, int]] = {
    "host": (512, 128),
    "run_id": (640, 128),
    "master": (768, 128),
    "device": (896, 64),
    "argv": (1024, 2048),  # NUL-separated arguments
    "launch_token": (3072, 64),  # $XFERTOP_LAUNCH_TOKEN: which `xfertop run` started this process
    "busy_thread": (3136, 64),  # H_BUSY_THREAD_PERMILLE's thread
}

#: The environment variable through which `xfertop run` names itself to every process of its command.
LAUNCH_TOKEN_ENV = "XFERTOP_LAUNCH_TOKEN"
_LAUNCH_EXITED, _LAUNCH_SIGNALLED = 1, 2

# -- step record: int64 word offsets inside a slot -----------------------------------------------
# Version 2: the host's step in six parts that add up to its wall (wait, loop_pre, copy, model, sync,
# loop_post; model is what is left), and the GPU's own idle gap before the step's first work.
R_SEQ, R_STEP, R_START_NS, R_WALL_NS, R_DATA_WAIT_NS, R_COPY_CPU_NS = 0, 1, 2, 3, 4, 5
#: The loop's own work between the batch's arrival and the step's first copy or model call.
R_LOOP_PRE_NS = 6
#: Host time blocked in syncs with the device (.item(), .tolist(), .cpu() of a CUDA tensor, synchronize).
R_SYNC_NS = 7
#: The GPU sat idle this long before the step's first work (its stream had drained): patched in once
#: the step's events complete; 0 when work was still queued then; NO_VALUE: not measured.
R_GPU_GAP_NS = 8
R_H2D_BYTES, R_SAMPLES, R_FLAGS = 9, 10, 11
#: The loop's own work after the model's last backward or optimizer step (logging, metrics, saving).
R_LOOP_POST_NS = 12
#: The step's periodic work, a pass over another loader (F_NESTED_PASS) or a checkpoint (F_CHECKPOINT), on
#: the GPU's own clock: from an event recorded as it began (complete once the work queued before it has run)
#: to one recorded as it ended (once its own work has run); a step holding both is not timed. Valid only
#: with F_PERIODIC_TIMED: rings written before it hold 0 here, and a ring's later lap may leave an old value.
R_PERIODIC_GPU_NS = 13
#: Words 14-15 are reserved (zero).
#: A GPU field not (yet) measured.
NO_VALUE = -1

# Record flags.
F_PINNED = 1
F_PAGEABLE_NON_BLOCKING = 2
F_GPU_PENDING = 4  # CUDA events recorded; the GPU gap will be patched in when they complete
F_GPU_RESOLVED = 8
F_GPU_DROPPED = 16  # too many steps pending: GPU timing given up for this one
F_COPIED = 32  # a copy was made or marked this step
F_EPOCH_START = 64  # the first step of an iteration over a loader; its data wait includes iter(loader)
F_WORKERS_STARTED = 128  # ... and that iter() started the loader's worker processes (not persistent)
F_CHECKPOINT = 256  # torch.save ran inside this step (`xfertop run`): a checkpoint's time is in its wall
#: The model's calls were seen this step (`xfertop run`): loop_pre and loop_post are measured; without it
#: the step's host time after the wait is copy, sync and model only.
F_PARTITIONED = 512
#: A sync with the device ran in this step.
F_SYNCED = 1024
#: `xfertop probe` replayed this step's batch (its input-free, pinned or copy-free phase): not how the job
#: runs, so no verdict rests on it.
F_PROBE_REPLAY = 2048
#: A pass over another loader ran inside this step, after its model (`xfertop run`): validation every N
#: steps. Its waits are in the step's data wait, its model calls in the loop's work after the step.
F_NESTED_PASS = 4096
#: The periodic work's events are recorded; R_PERIODIC_GPU_NS will be patched in when they complete (a job
#: that ends first leaves it pending: the work is then read unmeasured).
F_PERIODIC_PENDING = 8192
#: R_PERIODIC_GPU_NS holds the periodic work's time on the GPU's clock.
F_PERIODIC_TIMED = 16384
#: An optimizer (torch.optim, any subclass) stepped in this step (`xfertop run`, `xfertop.watch`): the
#: parameters are not updated by hand, so the loop's work after the step is not such an update.
F_OPTIMIZER_STEPPED = 32768
#: Bits 16-23: the num_workers of the loader this step's batch came from, plus one (0: not known, as in
#: rings written before it, or a step no loader opened). A job's loaders differ (training with 8 workers, a
#: validation loader with none): the advice names the workers of the loader whose steps wait.
F_LOADER_WORKERS_SHIFT = 16
F_LOADER_WORKERS_MASK = 0xFF << F_LOADER_WORKERS_SHIFT


def loader_workers_flags(workers: int | None) -> int:
    """The record flags that say a step's batch came from a loader of ``workers`` workers."""
    if workers is None or workers < 0:
        return 0
    return (min(workers, 0xFE) + 1) << F_LOADER_WORKERS_SHIFT


def loader_workers_of(flags: int) -> int | None:
    """The num_workers of the loader a step's batch came from (loader_workers_flags), None if not known."""
    field = (flags & F_LOADER_WORKERS_MASK) >> F_LOADER_WORKERS_SHIFT
    return field - 1 if field else None


def ring_bytes(capacity: int) -> int:
    return HEADER_BYTES + capacity * RECORD_BYTES


def slot_word(capacity: int, step: int) -> int:
    """Word index of the first word of the slot that holds ``step``."""
    return HEADER_BYTES // 8 + (step % capacity) * RECORD_WORDS


# -- writer side ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RingIdentity:
    uid: int
    pid: int
    ppid: int
    start_ticks: int
    created_unix_ns: int
    rank: int | None
    local_rank: int | None
    world_size: int | None
    host: str
    run_id: str
    master: str
    device: str
    argv: tuple[str, ...]
    #: The token of the `xfertop run` that started this process ("" for none): the launcher finds the
    #: rings of its command by it, to record how the command ended (H_LAUNCH_EXIT).
    launch_token: str = field(default="", kw_only=True)


def encode_launch_exit(exit_code: int | None, signal_number: int | None) -> int:
    """One header word for how the command of `xfertop run` ended: an exit status or a signal."""
    if signal_number is not None:
        return (_LAUNCH_SIGNALLED << 32) | (signal_number & 0xFFFF_FFFF)
    return (_LAUNCH_EXITED << 32) | ((exit_code or 0) & 0xFFFF_FFFF)


def decode_launch_exit(word: int) -> tuple[int | None, int | None]:
    """(exit code, signal) from H_LAUNCH_EXIT; (None, None) when nothing (or nothing known) is recorded."""
    kind, value = word >> 32, word & 0xFFFF_FFFF
    if kind == _LAUNCH_EXITED:
        return value, None
    if kind == _LAUNCH_SIGNALLED:
        return None, value
    return None, None


def _put_string(buf: Any, name: str, text: str) -> None:
    offset, length = STRINGS[name]
    raw = text.encode("utf-8", "replace")[: length - 4]
    buf[offset : offset + length] = (len(raw).to_bytes(4, "little") + raw).ljust(length, b"\x00")


def encode_argv(argv: tuple[str, ...]) -> str:
    return "\x00".join(argv)


def write_header(buf: Any, words: memoryview, identity: RingIdentity, capacity: int) -> None:
    """Fill a zeroed ring; the magic goes last so a reader never trusts a half-written header."""
    words[H_VERSION] = VERSION
    words[H_BYTE_ORDER] = BYTE_ORDER_MARK
    words[H_HEADER_BYTES] = HEADER_BYTES
    words[H_RECORD_BYTES] = RECORD_BYTES
    words[H_CAPACITY] = capacity
    words[H_UID] = identity.uid
    words[H_PID] = identity.pid
    words[H_PPID] = identity.ppid
    words[H_START_TICKS] = identity.start_ticks
    words[H_CREATED_UNIX_NS] = identity.created_unix_ns
    words[H_RANK] = NO_VALUE if identity.rank is None else identity.rank
    words[H_LOCAL_RANK] = NO_VALUE if identity.local_rank is None else identity.local_rank
    words[H_WORLD_SIZE] = NO_VALUE if identity.world_size is None else identity.world_size
    for word in (H_PINNED_BYTES, H_PINNED_ACTIVE_BYTES, H_WORKERS):
        words[word] = NO_VALUE
    _put_string(buf, "host", identity.host)
    _put_string(buf, "run_id", identity.run_id)
    _put_string(buf, "master", identity.master)
    _put_string(buf, "device", identity.device)
    _put_string(buf, "argv", encode_argv(identity.argv))
    _put_string(buf, "launch_token", identity.launch_token)
    buf[0:8] = MAGIC


def set_device_string(buf: Any, device: str) -> None:
    _put_string(buf, "device", device)


def set_busy_thread_string(buf: Any, name: str) -> None:
    _put_string(buf, "busy_thread", name)


# -- reader side ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RingHeader(RingIdentity):
    """What a reader decodes: the writer's identity, plus the format facts it was written with."""

    version: int
    capacity: int


class RingFormatError(Exception):
    """The file is not a ring this viewer can read; the message is a sentence for the user."""


class UnknownVersionError(RingFormatError):
    pass


class RingNotReadyError(RingFormatError):
    """The magic is still zero: the writer is filling the header right now (or died doing so)."""


def read_string(buf: Any, name: str) -> str:
    offset, length = STRINGS[name]
    used = int.from_bytes(bytes(buf[offset : offset + 4]), "little")
    if used > length - 4:
        raise RingFormatError(f"malformed: the {name} string claims {used} bytes")
    return bytes(buf[offset + 4 : offset + 4 + used]).decode("utf-8", "replace")


def _optional(value: int) -> int | None:
    return None if value < 0 else value


def read_header(buf: Any, words: memoryview, file_bytes: int) -> RingHeader:
    """Validate and decode a header; raises RingFormatError with a sentence when it cannot."""
    if file_bytes < HEADER_BYTES:
        raise RingFormatError(f"truncated: {file_bytes} bytes, shorter than the {HEADER_BYTES}-byte header")
    magic = bytes(buf[0:8])
    if magic == bytes(8):
        raise RingNotReadyError("header not written yet (the magic is zero)")
    if magic != MAGIC:
        raise RingFormatError("not an xfertop ring (bad magic)")
    version = words[H_VERSION]
    if version != VERSION:
        raise UnknownVersionError(
            f"ring format version {version} is not known to this viewer (it reads version {VERSION}); "
            "upgrade xfertop to read it"
        )
    if words[H_BYTE_ORDER] != BYTE_ORDER_MARK:
        raise RingFormatError("written with another byte order")
    if words[H_HEADER_BYTES] != HEADER_BYTES or words[H_RECORD_BYTES] != RECORD_BYTES:
        raise RingFormatError("malformed: header or record size does not match version 1")
    capacity = words[H_CAPACITY]
    if not 1 <= capacity <= MAX_CAPACITY:
        raise RingFormatError(f"malformed: capacity {capacity} is out of range")
    if file_bytes < ring_bytes(capacity):
        raise RingFormatError(
            f"truncated: {file_bytes} bytes, but {capacity} records need {ring_bytes(capacity)}"
        )
    argv_text = read_string(buf, "argv")
    return RingHeader(
        version=version,
        capacity=capacity,
        uid=words[H_UID],
        pid=words[H_PID],
        ppid=words[H_PPID],
        start_ticks=words[H_START_TICKS],
        created_unix_ns=words[H_CREATED_UNIX_NS],
        rank=_optional(words[H_RANK]),
        local_rank=_optional(words[H_LOCAL_RANK]),
        world_size=_optional(words[H_WORLD_SIZE]),
        host=read_string(buf, "host"),
        run_id=read_string(buf, "run_id"),
        master=read_string(buf, "master"),
        device=read_string(buf, "device"),
        argv=tuple(argv_text.split("\x00")) if argv_text else (),
        launch_token=read_string(buf, "launch_token"),
    )


def read_record(words: memoryview, capacity: int, step: int, attempts: int = 4) -> list[int] | None:
    """The record of ``step`` read under its seqlock, or None if it is being written, torn or overwritten."""
    base = slot_word(capacity, step)
    for _ in range(attempts):
        seq_before = words[base + R_SEQ]
        if seq_before & 1:
            continue
        body = words[base : base + RECORD_WORDS].tolist()
        if words[base + R_SEQ] != seq_before or body[R_SEQ] != seq_before:
            continue
        return body if body[R_STEP] == step else None
    return None


def process_start_ticks(pid: int | str = "self") -> int:
    """Field 22 of /proc/<pid>/stat (clock ticks after boot): with the pid, it names one process for good."""
    with open(f"/proc/{pid}/stat", "rb") as stat_file:
        text = stat_file.read()
    parts = split_stat(text)
    if parts is None:
        raise ValueError(f"/proc/{pid}/stat has no ')' after the command name")
    return int(parts[2][1:].split()[19])  # past one byte after ')', whatever it is


def read_records(words: memoryview, capacity: int, first_step: int, count: int) -> list[list[int] | None]:
    """Records ``first_step`` .. ``first_step + count - 1`` in a few bulk copies, each checked under its
    seqlock as ``read_record`` does (sequence words before, bodies, sequence words after); None where a
    record was being written, torn or overwritten (ask ``read_record`` again for those)."""
    found: list[list[int] | None] = []
    step = first_step
    remaining = min(count, capacity)
    while remaining > 0:
        slot = step % capacity
        run = min(remaining, capacity - slot)
        base = HEADER_BYTES // 8 + slot * RECORD_WORDS
        end = base + run * RECORD_WORDS
        seqs_before = words[base:end:RECORD_WORDS].tolist()
        flat = words[base:end].tolist()
        seqs_after = words[base:end:RECORD_WORDS].tolist()
        for index in range(run):
            seq = seqs_before[index]
            offset = index * RECORD_WORDS
            torn = seq & 1 or seq != seqs_after[index] or flat[offset] != seq
            if torn or flat[offset + R_STEP] != step + index:
                found.append(None)
            else:
                found.append(flat[offset : offset + RECORD_WORDS])
        step += run
        remaining -= run
    return found


# -- the ring directory (both sides) ------------------------------------------------------------------
class RingDirRefused(Exception):
    """The ring directory, or a directory on the way to it, is not safe to use; the message is a sentence."""


def ring_dir_path(environ: Mapping[str, str] | None = None) -> str:
    """$XFERTOP_DIR, else $XDG_RUNTIME_DIR/xfertop when that runtime directory is private and ours, else
    /tmp/xfertop-<uid>. The runtime directory is never created here: one that is missing, not a directory
    (a symbolic link included), another user's, or writable by others is passed over."""
    env = os.environ if environ is None else environ
    if env.get("XFERTOP_DIR"):
        return env["XFERTOP_DIR"]
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if runtime and _private_and_ours(runtime):
        return os.path.join(runtime, "xfertop")
    return f"/tmp/xfertop-{os.getuid()}"


def _private_and_ours(path: str) -> bool:
    if not os.path.isabs(path):
        return False
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022


def ring_dir_candidates(environ: Mapping[str, str] | None = None) -> list[str]:
    """Every directory a job of this user may have written to: ring_dir_path() first, then the other
    defaults (/run/user/<uid>/xfertop, /tmp/xfertop-<uid>). Only $XFERTOP_DIR, when set, stands alone."""
    env = os.environ if environ is None else environ
    first = ring_dir_path(env)
    if env.get("XFERTOP_DIR"):
        return [first]
    candidates = [first, f"/run/user/{os.getuid()}/xfertop", f"/tmp/xfertop-{os.getuid()}"]
    return list(dict.fromkeys(os.path.normpath(path) for path in candidates))


def ring_dir_problem(path: str, st: os.stat_result) -> str | None:
    """Why a directory (lstat result) must not hold rings, as a sentence; None if it is private and ours."""
    if stat.S_ISLNK(st.st_mode):
        return (
            f"ring directory {path} is a symbolic link; refusing to use it (someone else may control "
            "where it points): remove it or set XFERTOP_DIR to a private directory"
        )
    if not stat.S_ISDIR(st.st_mode):
        return f"ring directory {path} is not a directory: remove it or set XFERTOP_DIR elsewhere"
    if st.st_uid != os.geteuid():
        return (
            f"ring directory {path} belongs to uid {st.st_uid}, not to you (uid {os.geteuid()}); refusing "
            "to use it: remove it or set XFERTOP_DIR to a private directory"
        )
    return None


def check_ring_dir(path: str) -> os.stat_result:
    """The lstat of ring directory ``path`` once it and every directory above it passed the checks.

    The directory itself: a real directory (not a symbolic link) of yours. Above it, as written and once
    symbolic links are resolved, each directory must belong to root or to you and be writable by no one
    else unless it is sticky (as /tmp is), and each symbolic link must belong to root or to you: otherwise
    someone else could swap what lies below (OpenSSH checks its files the same way). Raises RingDirRefused
    with a sentence, or FileNotFoundError when the directory or one above it does not exist.
    """
    st = os.lstat(path)
    problem = ring_dir_problem(path, st)
    if problem is not None:
        raise RingDirRefused(problem)
    check_dirs_above(path, os.path.dirname(os.path.abspath(path)))
    return st


def check_dirs_above(ring_dir: str, directory: str) -> None:
    """Raise RingDirRefused if ``directory`` (on the way to ``ring_dir``) or one above it would let someone
    else swap what lies below (the rules of check_ring_dir); FileNotFoundError if one is missing."""
    for chain in dict.fromkeys((directory, os.path.realpath(directory))):
        prefix = "/"
        for part in ["", *(part for part in chain.split("/") if part)]:
            prefix = os.path.join(prefix, part)
            problem = _ancestor_problem(ring_dir, prefix, os.lstat(prefix))
            if problem is not None:
                raise RingDirRefused(problem)


@functools.cache
def overflow_uid() -> int:
    """The uid a user namespace shows for owners it does not map (65534 unless the kernel says else)."""
    try:
        with open("/proc/sys/kernel/overflowuid") as file:
            return int(file.read())
    except (OSError, ValueError):
        return 65534


def _ancestor_problem(ring_dir: str, ancestor: str, st: os.stat_result) -> str | None:
    # The overflow uid is root's too, as a user namespace shows it (rootless containers, `unshare -r`):
    # there the host's /, /tmp... belong to it, and no process inside can act as it.
    trusted = (0, os.geteuid(), overflow_uid())
    where = f"ring directory {ring_dir} is refused: {ancestor} on its path"
    remedy = "set XFERTOP_DIR to a private directory of yours"
    if stat.S_ISLNK(st.st_mode):
        if st.st_uid in trusted:
            return None  # where it points is checked too, once resolved
        return f"{where} is a symbolic link owned by uid {st.st_uid}, who can point it elsewhere: {remedy}"
    if not stat.S_ISDIR(st.st_mode):
        return f"{where} is not a directory: {remedy}"
    if st.st_uid not in trusted:
        return f"{where} belongs to uid {st.st_uid}, who could replace what lies below it: {remedy}"
    if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
        mode = stat.S_IMODE(st.st_mode)
        return (
            f"{where} is writable by other users (mode {mode:04o}, not sticky), who could replace what lies "
            f"below it: run `chmod go-w {ancestor}` or {remedy}"
        )
    return None
