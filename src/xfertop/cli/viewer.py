"""The live viewer: build the real sources, hand them to the TUI, and tear everything down on exit."""

from __future__ import annotations

import os
import sys

from xfertop import startup_trace
from xfertop.analysis.rank_gpu import watched_processes
from xfertop.model.jobs import JobsState
from xfertop.sources.base import PollingSource
from xfertop.sources.gpu import GpuSource
from xfertop.sources.host import HostSource
from xfertop.sources.jobs import JobsSource
from xfertop.sources.nvml_api import NvmlApi
from xfertop.sources.prometheus_jobs import PrometheusJobsSource, check_url
from xfertop.sources.topology import TopologySource

# The UI modules (Textual) are imported only when a TUI is really started: `--once` and `--help` stay fast.

MIN_INTERVAL_S = 0.1
MAX_INTERVAL_S = 3600.0  # longer (inf) overflows the samplers' Event.wait and kills their threads


class ViewerError(Exception):
    """An expected failure, already worded for the person at the terminal."""


def check_interval(interval_s: float) -> float:
    if not interval_s >= MIN_INTERVAL_S:
        raise ViewerError(f"--interval must be at least {MIN_INTERVAL_S} s (got {interval_s})")
    if interval_s > MAX_INTERVAL_S:
        raise ViewerError(f"--interval must be at most {MAX_INTERVAL_S:.0f} s (got {interval_s})")
    return interval_s


def build_sources(
    interval_s: float, ring_dir: str | None = None, pcie: str = "auto", prometheus_url: str | None = None
):
    """The viewer's sources. With ``prometheus_url`` the jobs are those of every node that Prometheus
    scrapes (`xfertop --prometheus URL`); the GPU, host and topology panes stay this machine's."""
    from xfertop.ui.sources_bundle import JOBS_INTERVAL_S, Sources, host_interval_s

    gpu = GpuSource(interval_s=interval_s, pcie=pcie)
    host = HostSource(interval_s=host_interval_s(interval_s))
    jobs: PollingSource[JobsState]
    if prometheus_url is not None:
        jobs = PrometheusJobsSource(prometheus_jobs_url(prometheus_url), interval_s=PROMETHEUS_INTERVAL_S)
    else:
        jobs = JobsSource(interval_s=JOBS_INTERVAL_S, ring_dir=ring_dir)
    topology = TopologySource(nvml=NvmlApi(), start_nvml=True)
    watch_interesting_pids(gpu, host, jobs, topology)
    return Sources(gpu=gpu, host=host, jobs=jobs, topology=topology)


#: Prometheus is asked for the jobs this often: its data changes once per scrape (15 s by default).
PROMETHEUS_INTERVAL_S = 2.0


def prometheus_jobs_url(url: str) -> str:
    """``url`` checked as Prometheus's base URL; a ViewerError (one line) otherwise."""
    try:
        return check_url(url)
    except ValueError as exc:
        raise ViewerError(str(exc)) from None


def interesting_pids(gpu: GpuSource, jobs: PollingSource[JobsState]) -> set[int]:
    """GPU processes and training ranks: the processes the host source details (CPU, RSS, workers).
    Ranks read from Prometheus run on other machines: their pids name nothing here."""
    pids: set[int] = set()
    gpu_state, jobs_state = gpu.latest(), jobs.latest()
    for snapshot in gpu_state.gpus if gpu_state else ():
        pids.update(process.pid for process in snapshot.processes)
    if isinstance(jobs, PrometheusJobsSource):
        return pids
    for job in jobs_state.jobs if jobs_state else ():
        pids.update(rank.pid for rank in job.ranks if rank.status != "finished")
    return pids


def watch_interesting_pids(
    gpu: GpuSource, host: HostSource, jobs: PollingSource[JobsState], topology: TopologySource | None = None
) -> None:
    """Whenever the GPU or jobs source publishes, tell the host source (and the topology source) which
    processes to detail: the GPU processes and training ranks (of this machine)."""
    local_jobs = not isinstance(jobs, PrometheusJobsSource)

    def update(_state: object) -> None:
        host.watch_pids(interesting_pids(gpu, jobs))
        if topology is not None:
            topology.watch(watched_processes(gpu.latest(), jobs.latest() if local_jobs else None))

    gpu.subscribe(update)
    jobs.subscribe(update)


def is_terminal(stream) -> bool:
    """``stream`` is a terminal; False for a closed one (`<&-` makes sys.stdin None)."""
    try:
        return stream is not None and os.isatty(stream.fileno())
    except (OSError, ValueError):
        return False


def require_terminal() -> None:
    if not (is_terminal(sys.stdin) and is_terminal(sys.stdout)):
        raise ViewerError("the live view needs a terminal; for scripts use `xfertop --once --json`")


def run_tui(sources, interval_s: float, no_jobs_text: str | None = None, note=None) -> int:
    """Run the TUI until the user quits or the terminal goes away; the sources are stopped either way."""
    from xfertop.ui.app import XfertopApp

    startup_trace.mark("viewer: xfertop.ui.app imported (Textual)")
    app = XfertopApp(sources, interval_s=interval_s, no_jobs_text=no_jobs_text, note=note)
    startup_trace.mark("viewer: app built, app.run()")
    try:
        app.run()
    finally:
        sources.stop()
    return app.return_code or 0
