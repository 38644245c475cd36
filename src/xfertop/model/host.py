"""Host snapshots published by sources.host."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProcessStats:
    """One process of interest (a GPU process or a training job) and its children (DataLoader workers)."""

    pid: int
    name: str
    user: str | None
    cpu_percent: float | None
    rss_bytes: int | None
    num_threads: int | None
    #: Host memory the kernel reports as pinned/locked for this process (see docs for what counts).
    pinned_bytes: int | None
    children: tuple[ProcessStats, ...] = ()
    #: Why some figures are missing ("access denied: another user's process").
    error: str | None = None


@dataclass(frozen=True)
class HostState:
    timestamp: float
    hostname: str
    cpu_percent: float
    cpu_per_core_percent: tuple[float, ...]
    load_avg: tuple[float, float, float]
    mem_total_bytes: int
    mem_used_bytes: int
    mem_available_bytes: int
    swap_total_bytes: int
    swap_used_bytes: int
    processes: tuple[ProcessStats, ...] = ()
    error: str | None = None
