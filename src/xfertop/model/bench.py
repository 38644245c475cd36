"""Benchmark and acceptance results: what the bench child streams and reports, checks and the TUI read.

Bandwidth is in GB/s with GB = 1e9 bytes (``_gb_per_s``), as nvbandwidth and bandwidthTest report it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

#: Outcome of one acceptance check. "info" is reported with an expectation but never fails the run.
Status = Literal["pass", "warn", "fail", "info", "skip"]
#: Where a buffer lives: pageable host memory, pinned (page-locked) host memory, or the GPU.
MemoryKind = Literal["pageable", "pinned", "device"]
#: h2d, d2h, bidir (both at once, figure is the sum), d2d, or "-" where no copy direction applies.
Direction = Literal["h2d", "d2h", "bidir", "d2d", "-"]


@dataclass(frozen=True)
class Measurement:
    """One row of a case: a figure at one size, median over samples, warm-up kept apart."""

    label: str
    direction: Direction
    memory: MemoryKind | Literal["-"]
    size_bytes: int
    #: Main figure. Bandwidth rows: GB/s. Other rows say their unit in ``unit``.
    value: float
    unit: str = "GB/s"
    samples: tuple[float, ...] = ()
    value_min: float | None = None
    value_max: float | None = None
    #: First (warm-up) sample, never part of the median.
    warmup_value: float | None = None
    #: Copied data compared with what was written; None where not checked.
    verified: bool | None = None
    gpu_index: int | None = None
    #: Extra figures of this row, names with units ("host_call_ms", "overlap_efficiency").
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def spread(self) -> float | None:
        """(max - min) / median: 0.02 means the samples lay within 2% of each other."""
        if self.value_min is None or self.value_max is None or not self.value:
            return None
        return (self.value_max - self.value_min) / self.value


@dataclass(frozen=True)
class CaseResult:
    case: str
    title: str
    rows: tuple[Measurement, ...]
    wall_s: float
    notes: tuple[str, ...] = ()
    #: Set when the case could not run here (no second GPU, one NUMA node...): a sentence.
    skipped_reason: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class LinkFacts:
    """PCIe link of the benchmarked GPU, read while traffic flowed, and error counter deltas."""

    gpu_index: int
    gen_current: int | None
    width_current: int | None
    #: Max of the GPU *and* the slot it sits in.
    gen_max: int | None
    width_max: int | None
    #: What the GPU itself supports.
    gen_gpu_max: int | None
    pstate: str | None
    replay_delta: int | None
    correctable_delta: int | None
    #: Where the figures came from ("nvidia-smi", "cpu backend", ...).
    source: str = "nvidia-smi"


@dataclass(frozen=True)
class MachineFacts:
    hostname: str
    backend: str
    gpu_names: tuple[str, ...]
    driver_version: str | None
    cuda_version: str | None
    torch_version: str | None
    python_version: str
    cpu_count: int
    numa_nodes: int
    #: NUMA node of the benchmarked GPU's PCIe device (sysfs), None when unknown.
    gpu_numa_node: int | None
    #: CPUs this process may run on, and those local to the GPU.
    process_cpus: tuple[int, ...]
    gpu_local_cpus: tuple[int, ...]
    #: Other processes computing on the benchmarked GPU when the run started (they compete for PCIe).
    gpu_busy_pids: tuple[int, ...] = ()


@dataclass(frozen=True)
class Verdict:
    check: str
    status: Status
    message: str
    measured: float | None = None
    threshold_pass: float | None = None
    threshold_warn: float | None = None


@dataclass(frozen=True)
class BenchRun:
    """Everything one `xfertop bench` or `xfertop check` run produced."""

    schema: int
    mode: Literal["bench", "check"]
    started_utc: str
    wall_s: float
    machine: MachineFacts
    links: tuple[LinkFacts, ...]
    cases: tuple[CaseResult, ...]
    verdicts: tuple[Verdict, ...]
    overall: Status
    exit_code: int
    #: Thresholds in force, by name, so a report says what it was judged against.
    thresholds: dict[str, float] = field(default_factory=dict)
