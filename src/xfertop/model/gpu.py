"""GPU snapshots published by sources.gpu."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

#: How a PCIe throughput figure was obtained.
#: "counter": deltas of the cumulative byte counters (field values 197/198), covering all the time.
#: "gpm": GPM's PCIe metrics (Hopper or newer) between two samples, covering all the time.
#: "sampled": nvmlDeviceGetPcieThroughput, a 20 ms sample per call: covers only part of the time.
#: "none": neither is available on this GPU or driver.
PcieMethod = Literal["counter", "gpm", "sampled", "none"]


@dataclass(frozen=True)
class PcieThroughput:
    """PCIe traffic as the GPU sees it. RX is host-to-device, TX device-to-host.

    NVML counts protocol overhead too (about 7.5% above the payload on Gen5).
    """

    rx_bytes_per_s: float | None
    tx_bytes_per_s: float | None
    method: PcieMethod
    #: Share of the wall time of the last interval that the figures cover (1.0 for counters and GPM).
    coverage: float | None = None


@dataclass(frozen=True)
class PcieLink:
    gen_current: int | None
    width_current: int | None
    #: Max of this device *and system*: capped by the host slot.
    gen_max: int | None
    width_max: int | None
    #: What the GPU itself supports, whatever slot it sits in.
    gen_gpu_max: int | None


@dataclass(frozen=True)
class PcieErrors:
    """Counter deltas since xfertop started watching this GPU (None: not supported)."""

    replay_delta: int | None
    correctable_delta: int | None


@dataclass(frozen=True)
class GpuProcess:
    pid: int
    gpu_memory_bytes: int | None
    #: Joined from the host (psutil); None when the process is gone or not ours to read.
    user: str | None = None
    command: str | None = None


@dataclass(frozen=True)
class GpuSnapshot:
    index: int
    name: str
    uuid: str
    bus_id: str
    util_gpu_percent: float | None
    util_mem_percent: float | None
    mem_used_bytes: int | None
    mem_total_bytes: int | None
    pcie: PcieThroughput
    link: PcieLink
    errors: PcieErrors
    sm_clock_mhz: int | None
    mem_clock_mhz: int | None
    power_w: float | None
    power_limit_w: float | None
    temperature_c: float | None
    #: Active throttle (clock event) reasons in words, e.g. ("power cap", "hw slowdown").
    throttle_reasons: tuple[str, ...]
    processes: tuple[GpuProcess, ...]
    #: Set when the GPU stopped answering mid-run ("GPU is lost"), with the reason.
    lost_reason: str | None = None


@dataclass(frozen=True)
class GpuState:
    """Everything the GPU source knows at one instant."""

    timestamp: float
    gpus: tuple[GpuSnapshot, ...]
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    #: Why there are no GPUs, in words
    #: ("no NVIDIA driver found (libnvidia-ml.so.1): showing host metrics only").
    error: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
