"""The sources one app instance renders, handed to it whole (the app never builds or samples them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xfertop.model.gpu import GpuState
from xfertop.model.host import HostState
from xfertop.model.jobs import JobsState
from xfertop.model.topology import Topology
from xfertop.sources.base import PollingSource
from xfertop.sources.stacks import StackSampler

#: The jobs source reads rings at the display's pace but at least this often: a ring holds 1024 steps
#: (wire.DEFAULT_CAPACITY), so a job may run 2048 steps/s before a step is overwritten unread. Reading
#: at 10 Hz whatever the display showed cost 0.4-0.7% of a core for frames nobody saw.
JOBS_MAX_INTERVAL_S = 0.5


def jobs_interval_s(display_interval_s: float) -> float:
    return min(display_interval_s, JOBS_MAX_INTERVAL_S)


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

    def refreshed(self) -> list[PollingSource]:
        """The sources whose period is the display's refresh period: GPU and host. The jobs source
        follows it up to JOBS_MAX_INTERVAL_S; topology keeps its slow pace."""
        return [source for source in (self.gpu, self.host) if source is not None]

    def set_interval_s(self, interval_s: float) -> None:
        """Change how often the sources sample (the +/- keys)."""
        for source in self.refreshed():
            source.interval_s = interval_s
        if self.jobs is not None:
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
