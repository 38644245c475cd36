"""Topology snapshots published by sources.topology: PCIe paths, GPU-to-GPU links, NUMA, CPU placement.

Bus ids are normalised to sysfs form, ``0000:03:00.0`` (NVML prints an 8-digit domain).
A NUMA node of None means "unknown" (sysfs ``numa_node`` = -1 and NVML could not say).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: How two GPUs reach each other, as in the legend of ``nvidia-smi topo -m``:
#: "X" itself; "NV<n>" n bonded NVLinks; "PIX" through at most one PCIe switch; "PXB" through several
#: PCIe bridges without the host bridge; "PHB" through a PCIe host bridge (the CPU); "NODE" between host
#: bridges of one NUMA node; "SYS" across the link between NUMA nodes (UPI, Infinity Fabric).
GpuLink = str

#: Where a GPU's NUMA node came from.
NumaSource = Literal["sysfs", "nvml", "unknown"]


@dataclass(frozen=True)
class PcieHop:
    """One PCI function on the path from a GPU up to its root port, with the link it trains upstream."""

    bus_id: str
    #: PCI class code, e.g. 0x030200 (3D controller), 0x060400 (PCI bridge / switch port / root port).
    pci_class: int | None
    vendor_id: int | None
    device_id: int | None
    link_gen_current: int | None
    link_width_current: int | None
    link_gen_max: int | None
    link_width_max: int | None
    link_speed_current_gt_per_s: float | None = None
    link_speed_max_gt_per_s: float | None = None


@dataclass(frozen=True)
class GpuTopology:
    index: int
    bus_id: str
    #: The PCIe host bridge the GPU hangs under, e.g. "pci0000:00" (one per root complex or segment).
    host_bridge: str | None
    numa_node: int | None
    numa_source: NumaSource
    #: CPUs local to the GPU (sysfs local_cpulist); all CPUs when the platform does not say.
    local_cpus: tuple[int, ...]
    #: The GPU itself first, then each bridge up to and including the root port.
    pcie_path: tuple[PcieHop, ...]
    name: str | None = None
    #: Set when the GPU's sysfs entry could not be read (GPU known to NVML only, permission...).
    error: str | None = None


@dataclass(frozen=True)
class WatchedProcess:
    """A process the app wants placed: a training rank or another GPU process."""

    pid: int
    gpu_bus_id: str | None = None
    #: Shown in warnings ("rank 3"); None for processes without a rank.
    rank: int | None = None


@dataclass(frozen=True)
class ProcessPlacement:
    pid: int
    name: str | None
    rank: int | None
    gpu_bus_id: str | None
    #: CPUs the scheduler may use for it (Cpus_allowed_list, the same as sched_getaffinity).
    allowed_cpus: tuple[int, ...]
    #: CPUs its threads last ran on (the ``processor`` field of /proc/<pid>/task/*/stat).
    running_cpus: tuple[int, ...]
    #: NUMA nodes of running_cpus.
    running_nodes: tuple[int, ...]
    #: Resident bytes per NUMA node from /proc/<pid>/numa_maps; None when not readable.
    memory_bytes_by_node: dict[int, int] | None
    #: DataLoader workers and other descendants, flattened.
    workers: tuple[ProcessPlacement, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class Topology:
    timestamp: float
    gpus: tuple[GpuTopology, ...]
    #: links[i][j] for gpus[i] and gpus[j], legend as in GpuLink.
    links: tuple[tuple[GpuLink, ...], ...]
    #: NUMA node -> its CPUs, from /sys/devices/system/node.
    numa_cpus: dict[int, tuple[int, ...]]
    processes: tuple[ProcessPlacement, ...] = ()
    #: Where the GPU list came from: "nvml", "sysfs" or "none".
    gpu_source: str = "none"
    #: Why the topology is empty or partial, in a sentence.
    error: str | None = None
