"""What the app knows between frames: the latest snapshot of each source plus the history charts need.

Plain Python (no Textual) so it is easy to test; the app owns one and every pane renders from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xfertop.model.gpu import GpuState
from xfertop.model.host import HostState
from xfertop.model.jobs import JobsState
from xfertop.model.topology import Topology
from xfertop.ui.history import History

#: Refresh periods the +/- keys step through, in seconds.
REFRESH_STEPS_S = (0.25, 0.5, 1.0, 2.0, 5.0)


@dataclass
class ViewState:
    gpu: GpuState | None = None
    host: HostState | None = None
    jobs: JobsState | None = None
    topology: Topology | None = None
    history: History = field(default_factory=History)
    interval_s: float = 1.0
    paused: bool = False

    def apply_gpu(self, state: GpuState) -> None:
        self.gpu = state
        for snapshot in state.gpus:
            index = snapshot.index
            self.history.add(("gpu", index, "rx"), snapshot.pcie.rx_bytes_per_s)
            self.history.add(("gpu", index, "tx"), snapshot.pcie.tx_bytes_per_s)
            self.history.add(("gpu", index, "util"), snapshot.util_gpu_percent)
            mem_percent = None
            if snapshot.mem_used_bytes is not None and snapshot.mem_total_bytes:
                mem_percent = 100.0 * snapshot.mem_used_bytes / snapshot.mem_total_bytes
            self.history.add(("gpu", index, "mem"), mem_percent)

    def apply_host(self, state: HostState) -> None:
        self.host = state
        self.history.add(("host", "cpu"), state.cpu_percent)

    def apply_jobs(self, state: JobsState) -> None:
        self.jobs = state

    def faster(self) -> float:
        """Step to the next shorter refresh period (or stay at the shortest)."""
        shorter = [step for step in REFRESH_STEPS_S if step < self.interval_s - 1e-9]
        self.interval_s = shorter[-1] if shorter else REFRESH_STEPS_S[0]
        return self.interval_s

    def slower(self) -> float:
        longer = [step for step in REFRESH_STEPS_S if step > self.interval_s + 1e-9]
        self.interval_s = longer[0] if longer else REFRESH_STEPS_S[-1]
        return self.interval_s
