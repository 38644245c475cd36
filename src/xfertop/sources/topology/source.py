"""The machine's topology: GPUs, their PCIe paths and NUMA nodes, GPU-to-GPU links, process placement.

GPUs come from NVML when it answers (its index order and bus ids), else from sysfs (NVIDIA display and
3D controllers, in bus id order). PCIe paths, link speeds, NUMA nodes and local CPUs come from sysfs;
NVML adds NVLinks and the memory affinity of GPUs whose sysfs numa_node is -1. Everything is read below
``sysfs_root`` and ``proc_root`` so tests run on captured trees.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xfertop.model.topology import GpuLink, GpuTopology, NumaSource, Topology, WatchedProcess
from xfertop.sources.base import PollingSource
from xfertop.sources.gpu.nvml_api import GpuLost, NvmlApi
from xfertop.sources.host.proc_placement import children_by_parent, read_placement
from xfertop.sources.topology.gpu_links import pcie_link
from xfertop.sources.topology.sysfs_numa import node_of_cpu, numa_cpus
from xfertop.sources.topology.sysfs_pci import (
    device_path,
    local_cpus,
    normalise_bus_id,
    numa_node,
    nvidia_gpu_bus_ids,
    pcie_path,
)

#: NVML_NVLINK_MAX_LINKS in nvml.h (18 on Hopper).
NVLINK_MAX_LINKS = 18
#: nvmlDeviceGetMemoryAffinity's node-set size in unsigned longs: 4 x 64 = 256 nodes.
NODE_SET_WORDS = 4
NVML_AFFINITY_SCOPE_NODE = 0
NVML_FEATURE_ENABLED = 1


@dataclass(frozen=True)
class _NvmlGpu:
    index: int
    bus_id: str
    name: str | None
    handle: Any


NvlinkCounts = dict[tuple[str, str], int]


def read_topology(
    sysfs_root: Path = Path("/sys"),
    proc_root: Path = Path("/proc"),
    processes: Sequence[WatchedProcess] = (),
    nvml: NvmlApi | None = None,
    nvlink_cache: dict[tuple[str, ...], NvlinkCounts] | None = None,
) -> Topology:
    """Read everything once. Never raises for a missing file, GPU or process: reasons go in ``error``.

    NVLink wiring does not change while the GPUs stay the same: pass a dict as ``nvlink_cache`` to ask
    NVML once per set of GPUs (36 calls per GPU) instead of on every read."""
    nodes = numa_cpus(sysfs_root)
    nvml_gpus = _nvml_gpus(nvml) if nvml is not None else []
    if nvml_gpus:
        listed = [(g.index, g.bus_id, g.name) for g in nvml_gpus]
        source = "nvml"
    else:
        listed = [(i, bus_id, None) for i, bus_id in enumerate(nvidia_gpu_bus_ids(sysfs_root))]
        source = "sysfs" if listed else "none"
    handles = {g.bus_id: g.handle for g in nvml_gpus}
    gpus = tuple(
        _gpu(sysfs_root, index, bus_id, name, nvml, handles.get(bus_id)) for index, bus_id, name in listed
    )
    nvlinks: NvlinkCounts = {}
    if nvml is not None and nvml_gpus:
        key = tuple(g.bus_id for g in nvml_gpus)
        cache = nvlink_cache if nvlink_cache is not None else {}
        nvlinks = cache[key] if key in cache else cache.setdefault(key, _nvlink_counts(nvml, nvml_gpus))
    links = _link_matrix(sysfs_root, gpus, len(nodes), nvlinks)
    tree = children_by_parent(proc_root) if processes else {}
    cpu_node = node_of_cpu(nodes)
    placements = tuple(read_placement(proc_root, _normalised(p), cpu_node, tree) for p in processes)
    error = None
    if not gpus:
        error = (
            "no NVIDIA GPU found (none in NVML, none of PCI class 0x0302/0x0300 from vendor 0x10de "
            f"under {sysfs_root}/bus/pci/devices): showing host placement only"
        )
    return Topology(
        timestamp=time.time(),
        gpus=gpus,
        links=links,
        numa_cpus=nodes,
        processes=placements,
        gpu_source=source,
        error=error,
    )


def _normalised(process: WatchedProcess) -> WatchedProcess:
    if process.gpu_bus_id is None:
        return process
    return WatchedProcess(process.pid, normalise_bus_id(process.gpu_bus_id), process.rank)


def _gpu(
    sysfs_root: Path, index: int, bus_id: str, name: str | None, nvml: NvmlApi | None, handle: Any
) -> GpuTopology:
    chain = device_path(sysfs_root, bus_id)
    node = numa_node(sysfs_root, bus_id)
    numa_source: NumaSource = "sysfs" if node is not None else "unknown"
    if node is None and nvml is not None and handle is not None:
        node = _nvml_memory_node(nvml, handle)
        numa_source = "nvml" if node is not None else "unknown"
    error = (
        None
        if chain is not None
        else (f"GPU {index} ({bus_id}) has no entry under {sysfs_root}/bus/pci/devices: PCIe path unknown")
    )
    return GpuTopology(
        index=index,
        bus_id=bus_id,
        host_bridge=chain[0] if chain else None,
        numa_node=node,
        numa_source=numa_source,
        local_cpus=local_cpus(sysfs_root, bus_id),
        pcie_path=pcie_path(sysfs_root, bus_id) if chain is not None else (),
        name=name,
        error=error,
    )


def _link_matrix(
    sysfs_root: Path, gpus: tuple[GpuTopology, ...], node_count: int, nvlinks: NvlinkCounts
) -> tuple[tuple[GpuLink, ...], ...]:
    chains = {g.bus_id: device_path(sysfs_root, g.bus_id) or (g.bus_id,) for g in gpus}
    rows = []
    for a in gpus:
        row = []
        for b in gpus:
            count = nvlinks.get((a.bus_id, b.bus_id), 0) if a is not b else 0
            row.append(
                f"NV{count}"
                if count
                else pcie_link(chains[a.bus_id], chains[b.bus_id], a.numa_node, b.numa_node, node_count)
            )
        rows.append(tuple(row))
    return tuple(rows)


# -- NVML ---------------------------------------------------------------------------------------------
def _query(nvml: NvmlApi, function: str, *args: Any) -> Any:
    try:
        return nvml.query(function, *args)
    except GpuLost:
        return None


def _nvml_gpus(nvml: NvmlApi) -> list[_NvmlGpu]:
    gpus = []
    for index in range(nvml.device_count()):
        handle = _query(nvml, "nvmlDeviceGetHandleByIndex", index)
        pci = _query(nvml, "nvmlDeviceGetPciInfo", handle) if handle is not None else None
        bus_id = _text(getattr(pci, "busId", None))
        if bus_id:
            name = _text(_query(nvml, "nvmlDeviceGetName", handle))
            gpus.append(_NvmlGpu(index, normalise_bus_id(bus_id), name, handle))
    return gpus


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return value if isinstance(value, str) else None


def _nvml_memory_node(nvml: NvmlApi, handle: Any) -> int | None:
    """The one NUMA node in the GPU's memory affinity, or None when NVML gives none or several."""
    words = _query(nvml, "nvmlDeviceGetMemoryAffinity", handle, NODE_SET_WORDS, NVML_AFFINITY_SCOPE_NODE)
    if words is None:
        return None
    nodes = [
        word_index * 64 + bit
        for word_index, word in enumerate(list(words))
        for bit in range(64)
        if int(word) >> bit & 1
    ]
    return nodes[0] if len(nodes) == 1 else None


def _nvlink_counts(nvml: NvmlApi, gpus: list[_NvmlGpu]) -> NvlinkCounts:
    """Active NVLinks between each pair of GPUs. Links that end on an NVSwitch (a remote that is not one
    of the GPUs) connect every pair of switch-attached GPUs, with the smaller of their link counts."""
    bus_ids = {g.bus_id for g in gpus}
    direct: NvlinkCounts = {}
    to_switch: dict[str, int] = {}
    for gpu in gpus:
        for link in range(NVLINK_MAX_LINKS):
            if _query(nvml, "nvmlDeviceGetNvLinkState", gpu.handle, link) != NVML_FEATURE_ENABLED:
                continue
            remote = _query(nvml, "nvmlDeviceGetNvLinkRemotePciInfo_v2", gpu.handle, link) or _query(
                nvml, "nvmlDeviceGetNvLinkRemotePciInfo", gpu.handle, link
            )
            remote_bus = _text(getattr(remote, "busId", None))
            if remote_bus and normalise_bus_id(remote_bus) in bus_ids:
                key = (gpu.bus_id, normalise_bus_id(remote_bus))
                direct[key] = direct.get(key, 0) + 1
            elif remote_bus:
                to_switch[gpu.bus_id] = to_switch.get(gpu.bus_id, 0) + 1
    for a, links_a in to_switch.items():
        for b, links_b in to_switch.items():
            if a != b:
                direct[(a, b)] = direct.get((a, b), 0) + min(links_a, links_b)
    return direct


class TopologySource(PollingSource[Topology]):
    """Re-reads the topology every ``interval_s`` (slow: placement changes, the PCIe tree does not)."""

    name = "topology"

    def __init__(
        self,
        interval_s: float = 5.0,
        sysfs_root: Path = Path("/sys"),
        proc_root: Path = Path("/proc"),
        nvml: NvmlApi | None = None,
        start_nvml: bool = False,
    ) -> None:
        """``nvml``: an initialised NvmlApi, or (``start_nvml``) one this source starts on its first
        read and shuts down in close(); without a driver it then reads sysfs only."""
        super().__init__(interval_s)
        self._sysfs_root, self._proc_root, self._nvml = sysfs_root, proc_root, nvml
        self._start_nvml = start_nvml
        self._nvml_started = False
        self._processes: tuple[WatchedProcess, ...] = ()
        self._nvlink_cache: dict[tuple[str, ...], NvlinkCounts] = {}

    def watch(self, processes: Sequence[WatchedProcess]) -> None:
        """Replace the processes to place (a tuple swap: safe from any thread)."""
        self._processes = tuple(processes)

    def sample(self) -> Topology:
        if self._start_nvml and self._nvml is not None and not self._nvml_started:
            self._nvml_started = True
            if self._nvml.init() is not None:  # no driver: the GPUs come from sysfs
                self._nvml = None
        return read_topology(
            self._sysfs_root, self._proc_root, self._processes, self._nvml, nvlink_cache=self._nvlink_cache
        )

    def close(self) -> None:
        if self._nvml_started and self._nvml is not None:
            self._nvml.shutdown()
