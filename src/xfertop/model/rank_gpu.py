"""Which GPU a training rank computes on, joined from the GPU and jobs snapshots.

Pure: snapshots in, answers out. The join serves the verdict's evidence (analysis/evidence.py: NVML
utilisation and PCIe RX of a rank's GPU), the exporter's per-rank GPU label, and the processes the
host and topology sources detail (sources/bundle.py, cli/once.py). It sits with the model, below both.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from xfertop.model.gpu import GpuSnapshot, GpuState
from xfertop.model.jobs import JobsState, RankState
from xfertop.model.topology import WatchedProcess

_CUDA_INDEX = re.compile(r"^cuda:(\d+)$")


def cuda_index(device: str) -> int | None:
    """ "cuda:3" -> 3; None for "cpu", a bare "cuda" or anything else."""
    match = _CUDA_INDEX.match(device.strip())
    return int(match.group(1)) if match else None


def rank_gpu(rank: RankState, gpus: Sequence[GpuSnapshot]) -> GpuSnapshot | None:
    """The GPU whose NVML process list holds the rank's pid (the one its device index names when
    several do), else the GPU its device index names. None when neither says, or the GPU is lost.

    The device index is CUDA's ordinal: it matches NVML's index unless CUDA_VISIBLE_DEVICES reorders
    the GPUs, which is why the process list is asked first."""
    index = cuda_index(rank.device)
    holding = [gpu for gpu in gpus if any(proc.pid == rank.pid for proc in gpu.processes)]
    named = next((gpu for gpu in gpus if gpu.index == index), None)
    if len(holding) == 1:
        found: GpuSnapshot | None = holding[0]
    elif holding:
        found = named if named in holding else None
    else:
        found = named
    return None if found is None or found.lost_reason else found


def watched_processes(gpu_state: GpuState | None, jobs_state: JobsState | None) -> tuple[WatchedProcess, ...]:
    """Training ranks that still run (with their rank and GPU), then the other GPU processes."""
    gpus = gpu_state.gpus if gpu_state is not None else ()
    watched: dict[int, WatchedProcess] = {}
    for job in jobs_state.jobs if jobs_state is not None else ():
        for rank in job.ranks:
            if rank.status == "finished":
                continue
            gpu = rank_gpu(rank, gpus)
            watched[rank.pid] = WatchedProcess(rank.pid, gpu.bus_id if gpu else None, rank.rank)
    for gpu in gpus:
        for proc in gpu.processes:
            watched.setdefault(proc.pid, WatchedProcess(proc.pid, gpu.bus_id))
    return tuple(watched.values())
