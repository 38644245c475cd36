"""What the app knows between frames: the latest snapshot of each source plus the history charts need.

Plain Python (no Textual) so it is easy to test; the app owns one and every pane renders from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xfertop.analysis.step_timeline import StepTimeline
from xfertop.model.gpu import GpuState
from xfertop.model.host import HostState
from xfertop.model.jobs import JobsState
from xfertop.model.topology import Topology
from xfertop.ui.history import History

#: Refresh periods the +/- keys step through, in seconds.
REFRESH_STEPS_S = (0.25, 0.5, 1.0, 2.0, 5.0)
#: The GPU charts get one point per this many seconds at least: at faster periods a point is the mean
#: of the samples in its second (an average of rates over the second is the rate over the second), so a
#: tall chart moves once a second instead of at every sample.
CHART_POINT_S = 1.0


def chart_key(key: tuple) -> tuple:
    """The chart series of a history series (one point per chart_point_s)."""
    return (*key, "chart")


@dataclass
class _Bucket:
    start_s: float
    values: list[float]
    count: int = 0


@dataclass
class ViewState:
    gpu: GpuState | None = None
    host: HostState | None = None
    jobs: JobsState | None = None
    topology: Topology | None = None
    history: History = field(default_factory=History)
    interval_s: float = 1.0
    paused: bool = False
    #: Chart series -> the samples of the point being gathered.
    _buckets: dict[tuple, _Bucket] = field(default_factory=dict)
    #: Each rank's steps over minutes, by ring path (the step strip): kept while the rank is in view.
    step_timelines: dict[str, StepTimeline] = field(default_factory=dict)

    @property
    def chart_point_s(self) -> float:
        return max(self.interval_s, CHART_POINT_S)

    def apply_gpu(self, state: GpuState) -> None:
        self.gpu = state
        for snapshot in state.gpus:
            index = snapshot.index
            mem_percent = None
            if snapshot.mem_used_bytes is not None and snapshot.mem_total_bytes:
                mem_percent = 100.0 * snapshot.mem_used_bytes / snapshot.mem_total_bytes
            for name, value in (
                ("rx", snapshot.pcie.rx_bytes_per_s),
                ("tx", snapshot.pcie.tx_bytes_per_s),
                ("util", snapshot.util_gpu_percent),
                ("mem", mem_percent),
            ):
                self.history.add(("gpu", index, name), value)
                self._add_chart_point(("gpu", index, name), value, state.timestamp)

    def _add_chart_point(self, key: tuple, value: float | None, timestamp: float) -> None:
        """Gather ``value`` into the chart point of its second; a new second closes the last point."""
        point_s = self.chart_point_s
        bucket = self._buckets.get(key)
        if bucket is not None and timestamp >= bucket.start_s + point_s:
            values = bucket.values
            self.history.add(chart_key(key), sum(values) / len(values) if values else None)
            bucket = None
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(start_s=timestamp - timestamp % point_s, values=[])
        if value is not None:
            bucket.values.append(value)
        bucket.count += 1

    def apply_host(self, state: HostState) -> None:
        self.host = state
        self.history.add(("host", "cpu"), state.cpu_percent)

    def apply_jobs(self, state: JobsState) -> None:
        self.jobs = state
        timelines = self.step_timelines
        shown = set()
        for job in state.jobs:
            for rank in job.ranks:
                shown.add(rank.ring_path)
                timeline = timelines.get(rank.ring_path)
                if timeline is None:
                    timeline = timelines[rank.ring_path] = StepTimeline()
                timeline.add(rank.steps)
        for gone in timelines.keys() - shown:
            del timelines[gone]

    def faster(self) -> float:
        """Step to the next shorter refresh period (or stay at the shortest)."""
        shorter = [step for step in REFRESH_STEPS_S if step < self.interval_s - 1e-9]
        self.interval_s = shorter[-1] if shorter else REFRESH_STEPS_S[0]
        return self.interval_s

    def slower(self) -> float:
        longer = [step for step in REFRESH_STEPS_S if step > self.interval_s + 1e-9]
        self.interval_s = longer[0] if longer else REFRESH_STEPS_S[-1]
        return self.interval_s
