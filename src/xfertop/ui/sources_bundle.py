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
        """The sources whose period follows the display's refresh rate: GPU and host. The jobs source
        keeps its own fast pace (rings are cheap to read and steps are short), topology its slow one."""
        return [source for source in (self.gpu, self.host) if source is not None]

    def set_interval_s(self, interval_s: float) -> None:
        """Change how often the GPU and host sources sample (the +/- keys)."""
        for source in self.refreshed():
            source.interval_s = interval_s

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
