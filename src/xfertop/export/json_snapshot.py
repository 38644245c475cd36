"""One snapshot of everything the TUI shows, as JSON-ready dicts (`xfertop --once --json`).

The schema is versioned ("xfertop.snapshot/1") and documented field by field in docs/json-schema.md.
Dataclasses become objects, tuples become lists, a value the machine could not give stays null.
Additions keep the version; a renamed or removed field bumps it.
"""

from __future__ import annotations

from typing import Any

from xfertop.analysis.job_analysis import Analysis, JobAnalysis, RankAnalysis, analyse, analyse_job
from xfertop.analysis.pcie_link import gpus_under_load, link_bytes_per_s, link_warning, throughput_label
from xfertop.analysis.placement import placement_warnings
from xfertop.model.gpu import GpuSnapshot, GpuState
from xfertop.model.host import HostState
from xfertop.model.jobs import JobsState, JobState
from xfertop.model.plain import to_plain
from xfertop.model.topology import Topology

SCHEMA = "xfertop.snapshot/1"
#: Steps per rank included verbatim: enough to see the pattern, small enough to read.
RECENT_STEPS = 20
#: Top-level keys, in order; docs/json-schema.md describes each.
TOP_LEVEL_KEYS = ("schema", "timestamp", "driver", "gpus", "host", "jobs", "topology")


def gpu_dict(gpu: GpuSnapshot) -> dict[str, Any]:
    """The snapshot's fields plus the link figures the TUI derives from them."""
    link, pcie = gpu.link, gpu.pcie
    derived = {
        "capacity_bytes_per_s": link_bytes_per_s(link.gen_current, link.width_current),
        "max_capacity_bytes_per_s": link_bytes_per_s(link.gen_max, link.width_max),
        "rx_label": throughput_label("RX", pcie.rx_bytes_per_s, link.gen_current, link.width_current),
        "tx_label": throughput_label("TX", pcie.tx_bytes_per_s, link.gen_current, link.width_current),
        "warning": link_warning(link, pcie.rx_bytes_per_s, pcie.tx_bytes_per_s),
    }
    return {**to_plain(gpu), "link_summary": derived}


def rank_dict(analysed: RankAnalysis) -> dict[str, Any]:
    rank, stats = analysed.rank, analysed.stats
    fields = to_plain(rank)
    fields.pop("steps")
    return {
        **fields,
        "steps_recorded": len(rank.steps),
        "window": None if stats is None else to_plain(stats),
        "gpu_busy_share": analysed.gpu_busy_share,
        "recent_steps": [to_plain(step) for step in rank.steps[-RECENT_STEPS:]],
    }


def job_dict(job: JobState | JobAnalysis, gpu: GpuState | None = None) -> dict[str, Any]:
    """The job, its ranks and its verdict: from its analysis, or analysed here (host-bound needs ``gpu``:
    NVML utilisation of each rank's GPU)."""
    analysed = job if isinstance(job, JobAnalysis) else analyse_job(job, gpu)
    return {
        "job_key": analysed.job.job_key,
        "name": analysed.job.name,
        "live": analysed.live,
        "verdict": analysed.verdict.to_dict(),
        "verdict_frozen": analysed.frozen,
        "ended_how": list(analysed.ended_how),
        "failed": analysed.failed,
        "ranks": [rank_dict(rank) for rank in analysed.ranks],
    }


def topology_dict(topology: Topology, gpu: GpuState | None = None) -> dict[str, Any]:
    """The topology's fields plus the placement warnings (slow links only for GPUs under load now)."""
    warnings = placement_warnings(topology, gpus_under_load(gpu))
    return {**to_plain(topology), "warnings": [to_plain(warning) for warning in warnings]}


def snapshot_dict(
    gpu: GpuState | None,
    host: HostState | None,
    jobs: JobsState | None,
    timestamp: float,
    topology: Topology | None = None,
    analysis: Analysis | None = None,
) -> dict[str, Any]:
    """The whole snapshot. ``gpus`` is [] with ``driver.error`` saying why when NVML is unavailable.
    ``analysis``: the snapshot's analysis where the caller keeps one (frozen verdicts of ended jobs)."""
    if analysis is None:
        analysis = analyse(jobs, gpu, host=host)
    driver = {
        "driver_version": gpu.driver_version if gpu else None,
        "cuda_driver_version": gpu.cuda_driver_version if gpu else None,
        "error": gpu.error if gpu else "the GPU source did not answer",
        "notes": list(gpu.notes) if gpu else [],
    }
    jobs_part = {
        "ring_dir": jobs.ring_dir if jobs else None,
        "problems": list(jobs.problems) if jobs else [],
        "error": jobs.error if jobs else "the jobs source did not answer",
        "items": [job_dict(job) for job in analysis.jobs] if jobs else [],
    }
    return {
        "schema": SCHEMA,
        "timestamp": timestamp,
        "driver": driver,
        "gpus": [gpu_dict(snapshot) for snapshot in gpu.gpus] if gpu else [],
        "host": None if host is None else to_plain(host),
        "jobs": jobs_part,
        "topology": None if topology is None else topology_dict(topology, gpu),
    }
