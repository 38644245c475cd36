"""How the command of `xfertop run` ended, written into the rings of the processes it started.

`xfertop run` names itself to its command through ``$XFERTOP_LAUNCH_TOKEN``; every reporter below it (the
command itself, or torchrun's ranks) copies the token into its ring header. When the command ends, the
launcher stores its exit status (or signal) in header word ``H_LAUNCH_EXIT`` of every ring with that token
whose writer has ended (or is the command itself), so a viewer can say how each rank ended.

Ordering: the launcher learns the command's status without reaping it (``waitid(WNOWAIT)``), records it,
then reaps. Until then the command is a zombie, which the viewer counts as running (/proc still shows its
pid and start time), so the viewer cannot take its ring for final before the status is in it. Rings of
grandchildren ended earlier; the viewer reads their header on for a grace time (sources/jobs/source.py).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import secrets
import stat

from xfertop import wire
from xfertop.sources.jobs.ring_reader import process_alive


def new_launch_token() -> str:
    """``<launcher pid>-<its start ticks>-<random>``: one launcher, never confused with a later one."""
    try:
        start_ticks = wire.process_start_ticks()
    except (OSError, ValueError, IndexError):
        start_ticks = 0
    return f"{os.getpid()}-{start_ticks}-{secrets.token_hex(4)}"


def wait_without_reaping(pid: int) -> int | None:
    """Block until child ``pid`` ends and return its status as Popen's returncode (``-signal`` for a
    signal), leaving it a zombie; None where waitid/WNOWAIT is not available or fails."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    except (AttributeError, OSError):
        return None
    if info is None:
        return None
    return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status


def record_exit(token: str, command_pid: int, returncode: int) -> int:
    """Store how the command ended in its rings; returns how many rings got it. Never raises."""
    exit_code, signal_number = (None, -returncode) if returncode < 0 else (returncode, None)
    word = wire.encode_launch_exit(exit_code, signal_number)
    recorded = 0
    with contextlib.suppress(Exception):
        for ring_dir in wire.ring_dir_candidates():
            recorded += _record_in_dir(ring_dir, token, command_pid, word)
    return recorded


def _record_in_dir(ring_dir: str, token: str, command_pid: int, word: int) -> int:
    try:
        wire.check_ring_dir(ring_dir)
        names = os.listdir(ring_dir)
    except (OSError, wire.RingDirRefused):
        return 0
    recorded = 0
    for name in names:
        if name.endswith(wire.RING_SUFFIX):
            with contextlib.suppress(OSError, ValueError, wire.RingFormatError):
                recorded += _record_in_ring(os.path.join(ring_dir, name), token, command_pid, word)
    return recorded


def _record_in_ring(path: str, token: str, command_pid: int, word: int) -> bool:
    fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_size < wire.HEADER_BYTES:
            return False
        with mmap.mmap(fd, wire.HEADER_BYTES, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE) as header:
            words = memoryview(header).cast("q")
            try:
                ring = wire.read_header(header, words, st.st_size)
                # A rank still running when its command ended (an orphan of a killed torchrun) ends on its
                # own later: the command's status is not its.
                ended = ring.pid == command_pid or not process_alive(ring.pid, ring.start_ticks)
                if ring.launch_token != token or ring.uid != os.getuid() or not ended:
                    return False
                words[wire.H_LAUNCH_EXIT] = word  # one aligned store, as the reporter writes its words
                return True
            finally:
                words.release()
    finally:
        os.close(fd)
