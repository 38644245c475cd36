"""Can this viewer attach to a process? Checked up front from /proc, and explained from py-spy's stderr.

Every answer a person sees is one sentence that says what is wrong and what to do. The proc root is a
parameter so tests can describe any machine (ptrace_scope 0-3, another user's process, a container).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from xfertop.procfs import split_stat

CAP_SYS_PTRACE_BIT = 19
RUN_INSTEAD = "or start the job with `xfertop run -- CMD`"


@dataclass(frozen=True)
class Caller:
    """Who is attaching: effective uid and whether CAP_SYS_PTRACE is in the effective set."""

    euid: int
    has_cap_sys_ptrace: bool
    pid: int

    @classmethod
    def current(cls, proc_root: Path = Path("/proc")) -> Caller:
        return cls(
            euid=os.geteuid(),
            has_cap_sys_ptrace=_has_cap_sys_ptrace(proc_root / "self" / "status"),
            pid=os.getpid(),
        )


def _has_cap_sys_ptrace(status_path: Path) -> bool:
    for line in _read(status_path).splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> CAP_SYS_PTRACE_BIT & 1)
    return False


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def ptrace_scope(proc_root: Path = Path("/proc")) -> int | None:
    """Yama's kernel.yama.ptrace_scope (0-3), or None where Yama is absent (classic same-uid rules)."""
    text = _read(proc_root / "sys" / "kernel" / "yama" / "ptrace_scope").strip()
    return int(text) if text.isdigit() else None


def in_container(proc_root: Path = Path("/proc")) -> bool:
    """A best guess: Docker's marker file, or a container runtime named in PID 1's cgroup."""
    cgroup = _read(proc_root / "1" / "cgroup")
    runtimes = ("docker", "kubepods", "containerd")
    return Path("/.dockerenv").exists() or any(word in cgroup for word in runtimes)


def _status_field(proc_root: Path, pid: int, key: str) -> list[str]:
    for line in _read(proc_root / str(pid) / "status").splitlines():
        if line.startswith(key + ":"):
            return line.split()[1:]
    return []


def process_uid(pid: int, proc_root: Path = Path("/proc")) -> int | None:
    uids = _status_field(proc_root, pid, "Uid")
    return int(uids[0]) if uids else None


def _is_ancestor(ancestor_pid: int, pid: int, proc_root: Path) -> bool:
    seen = set()
    while pid > 1 and pid not in seen:
        seen.add(pid)
        ppid = _status_field(proc_root, pid, "PPid")
        if not ppid:
            return False
        pid = int(ppid[0])
        if pid == ancestor_pid:
            return True
    return False


def attach_problem(pid: int, caller: Caller | None = None, proc_root: Path = Path("/proc")) -> str | None:
    """Why attaching to ``pid`` will fail, as a sentence with the fix; None when it should work."""
    caller = caller or Caller.current(proc_root)
    if not (proc_root / str(pid)).is_dir():
        return f"process {pid} is not running (no {proc_root / str(pid)}): check the pid."
    if _status_field(proc_root, pid, "State")[:1] == ["Z"]:
        return f"process {pid} has exited (a zombie its parent has not reaped yet): check the pid."
    owner = process_uid(pid, proc_root)
    if owner is not None and owner != caller.euid and not caller.has_cap_sys_ptrace:
        return (
            f"process {pid} belongs to uid {owner}, not to you (uid {caller.euid}): run xfertop as that "
            f"user or as root (`sudo xfertop attach {pid}`)."
        )
    scope = ptrace_scope(proc_root)
    if scope == 3:
        return (
            "ptrace_scope is 3: this kernel forbids attaching to any process until reboot; "
            "restart the job with `xfertop run -- CMD` to monitor it without attaching."
        )
    if scope == 2 and not caller.has_cap_sys_ptrace:
        return (
            f"ptrace_scope is 2: only root (CAP_SYS_PTRACE) may attach: run `sudo xfertop attach {pid}`, "
            f"{RUN_INSTEAD}."
        )
    if scope == 1 and not caller.has_cap_sys_ptrace and not _is_ancestor(caller.pid, pid, proc_root):
        return (
            f"ptrace_scope is 1: you may only attach to your own child processes: run "
            f"`sudo sysctl kernel.yama.ptrace_scope=0`, {RUN_INSTEAD}, or run xfertop as root "
            f"(`sudo xfertop attach {pid}`)."
        )
    return None


def _exited(pid: int, proc_root: Path) -> bool:
    """A zombie (or dead) process: /proc still lists it, but nothing runs there to sample."""
    try:
        stat = (proc_root / str(pid) / "stat").read_bytes()
    except OSError:
        return False  # unreadable: not known to have exited
    parts = split_stat(stat)
    state = parts[2].split()[:1] if parts is not None else []
    return bool(state) and state[0] in (b"Z", b"X")


def explain_pyspy_failure(
    pid: int, stderr: str, proc_root: Path = Path("/proc"), caller: Caller | None = None
) -> str:
    """Turn py-spy's stderr into one sentence that says what to do."""
    text = stderr.lower()
    if "permission denied" in text or "operation not permitted" in text or "os error 1)" in text:
        upfront = attach_problem(pid, caller, proc_root)
        if upfront is not None:
            return upfront
        if in_container(proc_root):
            return (
                f"py-spy was not allowed to read process {pid}: this looks like a container without "
                f"CAP_SYS_PTRACE; start it with `--cap-add SYS_PTRACE` (Docker) or "
                f"`securityContext.capabilities.add: [SYS_PTRACE]` (Kubernetes), {RUN_INSTEAD}."
            )
        return (
            f"py-spy was not allowed to read process {pid}: run `sudo xfertop attach {pid}`, {RUN_INSTEAD}."
        )
    if "check that the process is running" in text or not (proc_root / str(pid)).is_dir():
        return f"process {pid} is not running any more: check the pid."
    if _exited(pid, proc_root):
        return f"process {pid} has exited (its parent has not reaped it yet): nothing left to sample."
    if (
        "failed to find python version" in text
        or "failed to find a python interpreter" in text
        or "no python processes found" in text
    ):
        return f"process {pid} is not a Python process py-spy can read: pass the pid of the training script."
    first_line = next((line for line in stderr.splitlines() if line.strip()), "no output")
    return f"py-spy could not sample process {pid}: {first_line.strip()}"
