"""NVML's raw answers in words, and GPU processes joined with what the host knows about them."""

from __future__ import annotations

import psutil

from xfertop.model.gpu import GpuProcess
from xfertop.procfs import split_stat
from xfertop.sources.host.proc_placement import read_proc_file

#: Clock event (throttle) reason bits, in words. Same bits under both NVML names.
THROTTLE_WORDS = {
    0x1: "idle",
    0x2: "app clocks",
    0x4: "power cap",
    0x8: "hw slowdown",
    0x10: "sync boost",
    0x20: "sw thermal",
    0x40: "hw thermal",
    0x80: "power brake",
    0x100: "display clocks",
    0x200: "board limit",
    0x400: "reliability",
}


def throttle_words(bits: int | None) -> tuple[str, ...]:
    """Each set reason bit in words; a bit this version does not know shows as its hex value."""
    if not bits:
        return ()
    words = [word for bit, word in THROTTLE_WORDS.items() if bits & bit]
    unknown = bits & ~sum(THROTTLE_WORDS)
    return (*words, f"reason 0x{unknown:x}") if unknown else tuple(words)


def cuda_version_text(version: int | None) -> str | None:
    """NVML gives 13000 for CUDA 13.0 and 12040 for 12.4."""
    return None if version is None else f"{version // 1000}.{version % 1000 // 10}"


class HostProcesses:
    """GPU processes joined with what the host says about them (owner, command line).

    Reading those through psutil opens /etc/passwd, stats /etc/nsswitch.conf and reads three /proc
    files: the costliest part of a GPU sample. They do not change while a process runs one program, so
    they are read once per process and program (see ``_identity``). Each join still reads
    /proc/<pid>/stat, so a process that ended or became unreadable shows without owner at once, as it
    would without this. Call :meth:`forget_all_but` after each sample with the pids it listed.
    """

    def __init__(self) -> None:
        self._known: dict[int, tuple[bytes, GpuProcess]] = {}

    def join(self, pid: int, gpu_memory_bytes: int | None) -> GpuProcess:
        """One GPU process with its owner and command; gone or forbidden leaves them None."""
        identity = _identity(pid)
        known = self._known.get(pid)
        if identity is None or known is None or known[0] != identity:
            user, command, complete = _read_owner_and_command(pid)
            process = GpuProcess(pid=pid, gpu_memory_bytes=gpu_memory_bytes, user=user, command=command)
            if identity is not None and complete:
                self._known[pid] = (identity, process)
            else:  # a refusal or a half-started program may not last: ask again next time
                self._known.pop(pid, None)
            return process
        process = known[1]
        if process.gpu_memory_bytes != gpu_memory_bytes:
            process = GpuProcess(
                pid=pid, gpu_memory_bytes=gpu_memory_bytes, user=process.user, command=process.command
            )
            self._known[pid] = (identity, process)
        return process

    def __contains__(self, pid: object) -> bool:
        """Whether what the host says about ``pid`` is kept."""
        return pid in self._known

    def forget_all_but(self, pids: set[int]) -> None:
        """Drop what is known about every pid not in ``pids`` (no longer listed by NVML)."""
        for pid in self._known.keys() - pids:
            del self._known[pid]


def _identity(pid: int) -> bytes | None:
    """What names the process on ``pid`` and the program it runs, from /proc/<pid>/stat: its name
    (field 2), start time (22: a new process on a reused pid starts later) and where its arguments lie
    (48, 49: a new place after every exec, even of the same program, with address randomisation; 0
    where we may not look, then name and start time remain). None where it cannot be read (gone,
    another pid namespace, hidepid) or for a zombie (what psutil tells of one changes)."""
    try:
        text = read_proc_file(f"/proc/{pid}/stat")
    except OSError:
        return None
    parts = split_stat(text)
    if parts is None:
        return None
    before, _, after = parts
    fields = after[1:].split()  # fields[0] is field 3 (past one byte after ')', whatever it is)
    if len(fields) < 47 or fields[0] == b"Z":
        return None
    return b" ".join((before + b")", fields[19], fields[45], fields[46]))


def _read_owner_and_command(pid: int) -> tuple[str | None, str | None, bool]:
    """The user and command line of ``pid`` through psutil (None where gone or forbidden), and whether
    the answer is complete: both read, and the command from the arguments (a program still starting,
    a kernel thread or a process that cleared them has none; psutil's name stands in)."""
    user = command = None
    arguments: list[str] = []
    try:
        process = psutil.Process(pid)
        with process.oneshot():
            user = process.username()
            arguments = process.cmdline()
            command = " ".join(arguments) or process.name()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        pass  # another container's pid, or it ended between NVML's answer and ours
    return user, command, user is not None and bool(arguments)
