"""Messages the source threads post to the app: one per snapshot, coalesced to the latest.

A source can publish faster than the UI renders (the jobs source polls at up to 10 Hz); only the
newest snapshot matters for display, so a pending message of the same kind is replaced, not queued.
"""

from __future__ import annotations

from textual.message import Message

from xfertop.model.gpu import GpuState
from xfertop.model.host import HostState
from xfertop.model.jobs import JobsState
from xfertop.model.topology import Topology


class LatestSnapshot(Message, bubble=False):
    """A snapshot message: a pending one of the same kind is replaced by the newer one."""

    def can_replace(self, message: Message) -> bool:
        return type(message) is type(self)


class GpuStateUpdated(LatestSnapshot):
    def __init__(self, state: GpuState) -> None:
        super().__init__()
        self.state = state


class HostStateUpdated(LatestSnapshot):
    def __init__(self, state: HostState) -> None:
        super().__init__()
        self.state = state


class JobsStateUpdated(LatestSnapshot):
    def __init__(self, state: JobsState) -> None:
        super().__init__()
        self.state = state


class TopologyUpdated(LatestSnapshot):
    def __init__(self, state: Topology) -> None:
        super().__init__()
        self.state = state
