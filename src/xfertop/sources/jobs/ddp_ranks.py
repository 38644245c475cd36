"""Find the processes of one training job from their environment, with no help from the job.

torchrun / torch.distributed set RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR/PORT and, under torchelastic,
TORCHELASTIC_RUN_ID in every rank's environment. Ranks of one job share the run id (else the master
address and port) and, being ours to attach to, the uid. DataLoader workers inherit the environment
too, so a process whose parent is already a rank of the job is a worker, not a rank.
"""

from __future__ import annotations

from pathlib import Path

from xfertop.model.stacks import AttachTarget
from xfertop.sources.host.ptrace_access import process_uid

_RANK_KEYS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "MASTER_ADDR", "MASTER_PORT")


def read_environ(pid: int, proc_root: Path = Path("/proc")) -> dict[str, str]:
    """The rank-related variables of ``pid`` (empty when unreadable: another user's, or gone)."""
    try:
        raw = (proc_root / str(pid) / "environ").read_bytes()
    except OSError:
        return {}
    found = {}
    for entry in raw.split(b"\0"):
        key, sep, value = entry.partition(b"=")
        name = key.decode(errors="replace")
        if sep and name in _RANK_KEYS:
            found[name] = value.decode(errors="replace")
    return found


def job_key(pid: int, environ: dict[str, str]) -> str:
    if environ.get("TORCHELASTIC_RUN_ID"):
        return f"elastic:{environ['TORCHELASTIC_RUN_ID']}"
    if environ.get("MASTER_ADDR") and environ.get("MASTER_PORT"):
        return f"master:{environ['MASTER_ADDR']}:{environ['MASTER_PORT']}"
    return f"pid:{pid}"


def _int_or_none(value: str | None) -> int | None:
    return int(value) if value is not None and value.strip().lstrip("-").isdigit() else None


def _command(pid: int, proc_root: Path) -> str:
    try:
        raw = (proc_root / str(pid) / "cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()


def _ppid(pid: int, proc_root: Path) -> int | None:
    try:
        status = (proc_root / str(pid) / "status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("PPid:"):
            return int(line.split()[1])
    return None


def target_for(pid: int, proc_root: Path = Path("/proc")) -> AttachTarget:
    environ = read_environ(pid, proc_root)
    return AttachTarget(
        pid=pid,
        rank=_int_or_none(environ.get("RANK")),
        local_rank=_int_or_none(environ.get("LOCAL_RANK")),
        world_size=_int_or_none(environ.get("WORLD_SIZE")),
        job_key=job_key(pid, environ),
        command=_command(pid, proc_root),
    )


def job_ranks(pid: int, proc_root: Path = Path("/proc")) -> tuple[AttachTarget, ...]:
    """``pid`` and every same-uid process of its DDP job on this node, ordered by rank.

    A process that is not part of a distributed job comes back alone.
    """
    first = target_for(pid, proc_root)
    if first.job_key.startswith("pid:"):
        return (first,)
    owner = process_uid(pid, proc_root)
    members = {pid: first}
    for entry in proc_root.iterdir():
        if not entry.name.isdigit() or int(entry.name) == pid:
            continue
        other = int(entry.name)
        if process_uid(other, proc_root) != owner:
            continue
        environ = read_environ(other, proc_root)
        if "RANK" in environ and job_key(other, environ) == first.job_key:
            members[other] = target_for(other, proc_root)
    ranks = {p: t for p, t in members.items() if _ppid(p, proc_root) not in members}
    return tuple(sorted(ranks.values(), key=lambda t: (t.rank is None, t.rank or 0, t.pid)))
