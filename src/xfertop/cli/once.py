"""`xfertop --once --json`: sample every source once on this thread and print one JSON document."""

from __future__ import annotations

import json
import time

from xfertop.cli.viewer import prometheus_jobs_url
from xfertop.export.json_snapshot import snapshot_dict
from xfertop.model.jobs import JobsState
from xfertop.model.rank_gpu import watched_processes
from xfertop.sources.base import PollingSource
from xfertop.sources.bundle import interesting_pids
from xfertop.sources.gpu.nvml_api import NvmlApi
from xfertop.sources.gpu.source import GpuSource
from xfertop.sources.host.source import HostSource
from xfertop.sources.jobs.prometheus_jobs import PrometheusJobsSource
from xfertop.sources.jobs.source import JobsSource
from xfertop.sources.topology.source import TopologySource

#: The host's CPU figures (per core, per process) are rates over the time since the host source was made:
#: at least this long, as the GPU's first PCIe window is. Without a GPU that sample returns at once, and
#: over a few milliseconds (a tick or two of the kernel's 10 ms CPU accounting) every core reads 0% or
#: 100% busy: saturated cores could read idle, and the advice would add workers to them.
HOST_WINDOW_S = 0.3


def once_snapshot(ring_dir: str | None = None, pcie: str = "auto", prometheus_url: str | None = None) -> dict:
    host_began = time.monotonic()
    gpu, host = GpuSource(pcie=pcie), HostSource()
    jobs: PollingSource[JobsState] = JobsSource(ring_dir=ring_dir)
    if prometheus_url:
        jobs = PrometheusJobsSource(prometheus_jobs_url(prometheus_url))
    topology = TopologySource(nvml=NvmlApi(), start_nvml=True)
    sources: tuple[PollingSource, ...] = (gpu, host, jobs, topology)
    try:
        # The GPU sample gathers counter time first, which also gives the host's CPU figures an interval.
        gpu_state = gpu.sample_once()
        # The rings after the GPU: a rank's heartbeat then tells whether it still stepped when NVML was
        # read (a reading after its last step is its teardown, not its steps: analysis/evidence.py).
        jobs_state = jobs.sample_once()
        host.watch_pids(interesting_pids(gpu, jobs))
        left = HOST_WINDOW_S - (time.monotonic() - host_began)
        if left > 0:
            time.sleep(left)  # a measuring window, not a synchronisation
        host_state = host.sample_once()
        topology.watch(watched_processes(gpu_state, None if prometheus_url else jobs_state))
        topology_state = topology.sample_once()
    finally:
        for source in sources:
            source.stop()
            source.close()
    return snapshot_dict(gpu_state, host_state, jobs_state, timestamp=time.time(), topology=topology_state)


def run_once(as_json: bool, pcie: str = "auto", prometheus_url: str | None = None) -> int:
    document = once_snapshot(pcie=pcie, prometheus_url=prometheus_url)
    if as_json:
        print(json.dumps(document, indent=2))  # print, not sys.stdout.write: stdout may be closed (None)
        return 0
    print(_summary(document))
    return 0


def _summary(document: dict) -> str:
    """A few human lines for `xfertop --once` without --json."""
    lines = [f"xfertop snapshot on {document['host']['hostname'] if document['host'] else 'this host'}"]
    if not document["gpus"]:
        lines.append(document["driver"]["error"] or "no GPUs")
    for gpu in document["gpus"]:
        summary = gpu["link_summary"]
        lines.append(
            f"GPU {gpu['index']} {gpu['name']}: util {gpu['util_gpu_percent']}%  "
            f"{summary['rx_label']}  {summary['tx_label']}"
        )
    jobs = document["jobs"]
    for trouble in ([jobs["error"]] if jobs["error"] else []) + list(jobs["problems"]):
        lines.append(f"rings: {trouble}")
    for job in jobs["items"]:
        lines.append(f"job {job['name']}: {job['verdict']['headline']}")
    for warning in (document["topology"] or {}).get("warnings", []):
        lines.append(f"placement: {warning['message']}")
    return "\n".join(lines)
