"""The sources one app instance renders, handed to it whole (the app never builds or samples them)."""

from __future__ import annotations

from dataclasses import dataclass

from xfertop.model.gpu import GpuState
from xfertop.model.host import HostState
from xfertop.model.jobs import JobsState
from xfertop.sources.base import PollingSource


@dataclass(frozen=True)
class Sources:
    """Each part may be missing (None): the app shows what it has."""

    gpu: PollingSource[GpuState] | None = None
    host: PollingSource[HostState] | None = None
    jobs: PollingSource[JobsState] | None = None

    def all(self) -> list[PollingSource]:
        return [source for source in (self.gpu, self.host, self.jobs) if source is not None]

    def set_interval_s(self, interval_s: float) -> None:
        """Change how often every source samples (the +/- keys)."""
        for source in self.all():
            source.interval_s = interval_s

    def start(self) -> None:
        for source in self.all():
            source.start()

    def stop(self) -> None:
        for source in self.all():
            source.stop()
