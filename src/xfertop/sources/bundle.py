"""The sources a face reads (the live view, `xfertop record`, `xfertop export`), built and paced in one
place: which source samples how often, and which processes the host and topology sources detail (the
GPU processes and this machine's training ranks). The app never builds or samples them."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xfertop.model.gpu import GpuState
from xfertop.model.host import HostState
from xfertop.model.jobs import JobsState
from xfertop.model.rank_gpu import watched_processes
from xfertop.model.topology import Topology
from xfertop.sources.base import PollingSource
from xfertop.sources.gpu.nvml_api import NvmlApi
from xfertop.sources.gpu.source import GpuSource
from xfertop.sources.host.source import HostSource
from xfertop.sources.jobs.prometheus_jobs import PrometheusJobsSource
from xfertop.sources.jobs.source import JobsSource
from xfertop.sources.stacks.source import StackSampler
from xfertop.sources.topology.source import TopologySource

#: The jobs source reads rings at the display's period, but no faster than every JOBS_INTERVAL_S and no
#: slower than every JOBS_SLOWEST_S (a job that starts or ends is drawn at once, whatever the period).
#: What the jobs pane shows are statistics over a window of steps, which faster reads would not make
#: fresher: at 1 Hz that halves the reads of 0.5 s (the jobs source's thread took 1.13 of the view's
#: 10.0 ms of CPU a second on an H100, docs/ui.md). A ring filling faster than its reads keep up with is
#: read sooner (JobsSource.next_interval_s).
JOBS_INTERVAL_S = 0.5
JOBS_SLOWEST_S = 1.0
#: Host figures (CPU per core and per process, memory) refresh at most this often: the kernel counts CPU
#: time in 10 ms ticks (USER_HZ 100), so over a 0.25 s period a core's or a process's CPU% moves in
#: 4-point steps of noise; over 0.5 s in 2-point ones. At 4 Hz this halves the host sampler's and the
#: host and processes panes' work (docs/ui.md). The GPU panes follow the display's period.
HOST_MIN_INTERVAL_S = 0.5


def host_interval_s(display_interval_s: float) -> float:
    return max(display_interval_s, HOST_MIN_INTERVAL_S)


def jobs_interval_s(display_interval_s: float) -> float:
    return min(max(display_interval_s, JOBS_INTERVAL_S), JOBS_SLOWEST_S)


@dataclass(frozen=True)
class Sources:
    """Each part may be missing (None): the app shows what it has.

    ``topology`` starts only when the topology screen is first opened (reading numa_maps walks the
    ranks' page tables: not worth doing for nobody). ``stack_sampler`` builds the py-spy sampler the
    `s` key attaches with."""

    gpu: PollingSource[GpuState] | None = None
    host: PollingSource[HostState] | None = None
    jobs: PollingSource[JobsState] | None = None
    topology: PollingSource[Topology] | None = None
    stack_sampler: Callable[[int], StackSampler] = StackSampler

    def all(self) -> list[PollingSource]:
        return [source for source in (self.gpu, self.host, self.jobs, self.topology) if source is not None]

    def failures(self) -> list[str]:
        """A line for each source whose samples keep failing (PollingSource.failure)."""
        return [line for source in self.all() if (line := source.failure()) is not None]

    def set_interval_s(self, interval_s: float) -> None:
        """Change how often the sources sample (the +/- keys): the GPU at the display's period, the host
        at it but no faster than HOST_MIN_INTERVAL_S, the rings at it within JOBS_INTERVAL_S and
        JOBS_SLOWEST_S; Prometheus and topology keep their slow paces."""
        if self.gpu is not None:
            self.gpu.interval_s = interval_s
        if self.host is not None:
            self.host.interval_s = host_interval_s(interval_s)
        if isinstance(self.jobs, JobsSource):  # Prometheus keeps its own pace (PROMETHEUS_INTERVAL_S)
            self.jobs.interval_s = jobs_interval_s(interval_s)

    def start(self) -> None:
        for source in (self.gpu, self.host, self.jobs):
            if source is not None:
                source.start()

    def start_topology(self) -> None:
        if self.topology is not None:
            self.topology.start()

    def stop(self) -> None:
        for source in self.all():
            source.stop()

    def wait_for_first_samples(self, timeout_s: float) -> None:
        """Wait, ``timeout_s`` in all at most, for the GPU, host and jobs sources' first snapshots (a
        headless face's first frame then has them; topology starts apart and keeps its slow pace)."""
        deadline = time.monotonic() + timeout_s
        for source in (self.gpu, self.host, self.jobs):
            if source is not None:
                source.wait_for_sample(max(0.0, deadline - time.monotonic()))

    def latest(self) -> tuple[GpuState | None, HostState | None, JobsState | None, Topology | None]:
        """Each source's latest snapshot; None for a missing source, one without a snapshot yet, or one
        whose ``latest`` failed."""

        def of(source: PollingSource | None) -> Any:
            with contextlib.suppress(Exception):
                return source.latest() if source is not None else None
            return None

        return of(self.gpu), of(self.host), of(self.jobs), of(self.topology)


#: Prometheus is asked for the jobs this often: its data changes once per scrape (15 s by default).
PROMETHEUS_INTERVAL_S = 2.0


def build_sources(
    interval_s: float, ring_dir: str | None = None, pcie: str = "auto", prometheus_url: str | None = None
) -> Sources:
    """The real sources, not started. With ``prometheus_url`` (checked already) the jobs are those of every
    node that Prometheus scrapes (`xfertop --prometheus URL`); the GPU, host and topology stay local."""
    gpu = GpuSource(interval_s=interval_s, pcie=pcie)
    host = HostSource(interval_s=host_interval_s(interval_s))
    jobs: PollingSource[JobsState]
    if prometheus_url is not None:
        jobs = PrometheusJobsSource(prometheus_url, interval_s=PROMETHEUS_INTERVAL_S)
    else:
        jobs = JobsSource(interval_s=jobs_interval_s(interval_s), ring_dir=ring_dir)
    topology = TopologySource(nvml=NvmlApi(), start_nvml=True)
    watch_interesting_pids(gpu, host, jobs, topology)
    return Sources(gpu=gpu, host=host, jobs=jobs, topology=topology)


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
