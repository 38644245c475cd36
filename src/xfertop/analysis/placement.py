"""Placement warnings in words, from one topology snapshot: NUMA, crowded workers, slow links.

Pure: a Topology (and which GPUs carry traffic now) in, warnings out. Link checks need traffic because
idle links may train down to save power; a slow link under load is the one worth a warning.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal

from xfertop.model.topology import GpuTopology, PcieHop, ProcessPlacement, Topology

WarningKind = Literal[
    "numa_unknown", "rank_remote_cpu", "rank_remote_memory", "workers_crowded", "link_slow", "link_capped"
]
#: Below this share of a rank's resident memory on its GPU's node, the memory counts as remote.
LOCAL_MEMORY_SHARE_MIN = 0.5


@dataclass(frozen=True)
class PlacementWarning:
    kind: WarningKind
    message: str
    gpu_index: int | None = None
    pid: int | None = None


def placement_warnings(
    topology: Topology, gpus_under_load: Collection[int] = ()
) -> tuple[PlacementWarning, ...]:
    """Every warning for this snapshot, GPUs first, then processes."""
    several_nodes = len(topology.numa_cpus) > 1
    gpu_by_bus = {gpu.bus_id: gpu for gpu in topology.gpus}
    warnings: list[PlacementWarning] = []
    for gpu in topology.gpus:
        if gpu.numa_node is None and several_nodes:
            warnings.append(
                PlacementWarning(
                    "numa_unknown",
                    f"GPU {gpu.index}'s NUMA node is unknown (sysfs numa_node = -1, and NVML did not say): "
                    "xfertop cannot check which CPUs should feed it",
                    gpu_index=gpu.index,
                )
            )
    warnings.extend(_slow_links(topology.gpus, gpus_under_load))
    for process in topology.processes:
        process_gpu = gpu_by_bus.get(process.gpu_bus_id or "")
        if process_gpu is not None and process_gpu.numa_node is not None and several_nodes:
            warnings.extend(_numa_warnings(process, process_gpu))
        warnings.extend(_crowded_workers(process))
    return tuple(warnings)


def who(process: ProcessPlacement) -> str:
    if process.rank is not None:
        return f"rank {process.rank}"
    return f"process {process.pid}" + (f" ({process.name})" if process.name else "")


def _nodes(nodes: Collection[int]) -> str:
    ordered = sorted(nodes)
    return f"NUMA node {ordered[0]}" if len(ordered) == 1 else "NUMA nodes " + ", ".join(map(str, ordered))


def _numa_warnings(process: ProcessPlacement, gpu: GpuTopology) -> list[PlacementWarning]:
    found = []
    node = gpu.numa_node
    if process.running_nodes and node not in process.running_nodes:
        found.append(
            PlacementWarning(
                "rank_remote_cpu",
                f"{who(process)} runs on {_nodes(process.running_nodes)}, its GPU {gpu.index} hangs off node "
                f"{node}: every copy crosses the socket link; bind it (numactl --cpunodebind={node} "
                f"--membind={node})",
                gpu_index=gpu.index,
                pid=process.pid,
            )
        )
    memory = process.memory_bytes_by_node or {}
    total = sum(memory.values())
    if total > 0 and node is not None and memory.get(node, 0) / total < LOCAL_MEMORY_SHARE_MIN:
        remote_share = 1 - memory.get(node, 0) / total
        remote_nodes = [n for n, b in memory.items() if n != node and b > 0]
        found.append(
            PlacementWarning(
                "rank_remote_memory",
                f"{who(process)} keeps {remote_share:.0%} of its memory on {_nodes(remote_nodes)}, its GPU "
                f"{gpu.index} hangs off node {node}: batches staged there cross the socket link",
                gpu_index=gpu.index,
                pid=process.pid,
            )
        )
    return found


def _crowded_workers(process: ProcessPlacement) -> list[PlacementWarning]:
    if not process.workers:
        return []
    cores = set().union(*(w.allowed_cpus for w in process.workers))
    if not cores or len(process.workers) <= len(cores):
        return []
    plural = "core" if len(cores) == 1 else "cores"
    return [
        PlacementWarning(
            "workers_crowded",
            f"{len(process.workers)} workers of {who(process)} share {len(cores)} {plural} "
            f"(CPUs {cpu_ranges(sorted(cores))}): widen their CPU affinity or lower num_workers",
            pid=process.pid,
        )
    ]


def cpu_ranges(cpus: list[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5" (sorted CPUs, as in a cpulist); "" for none."""
    if not cpus:
        return ""
    ranges: list[str] = []
    start = previous = cpus[0]
    for cpu in [*cpus[1:], None]:
        if cpu is not None and cpu == previous + 1:
            previous = cpu
            continue
        ranges.append(str(start) if start == previous else f"{start}-{previous}")
        if cpu is not None:
            start = previous = cpu
    return ",".join(ranges)


def _slow_links(gpus: tuple[GpuTopology, ...], gpus_under_load: Collection[int]) -> list[PlacementWarning]:
    """A slot that caps the GPU (any time), and the nearest link running below what both its ends can do
    (under load only). Both ends of a link report it, so one warning per GPU, once per bridge."""
    found: list[PlacementWarning] = []
    warned: set[str] = set()
    for gpu in gpus:
        path = gpu.pcie_path
        if len(path) >= 2 and _gen_or_zero(path[1].link_gen_max) < _gen_or_zero(path[0].link_gen_max):
            found.append(
                PlacementWarning(
                    "link_capped",
                    f"GPU {gpu.index} can do Gen{path[0].link_gen_max} but its slot "
                    f"({path[1].bus_id}) tops out at Gen{path[1].link_gen_max}",
                    gpu_index=gpu.index,
                )
            )
        if gpu.index not in gpus_under_load:
            continue
        for position, hop in enumerate(path):
            parent = path[position + 1] if position + 1 < len(path) else None
            shortfall = _shortfall(hop, parent)
            if shortfall is None or hop.bus_id in warned:
                continue
            warned.add(hop.bus_id)
            where = (
                f"GPU {gpu.index}'s link"
                if position == 0
                else (f"the link of bridge {hop.bus_id} above GPU {gpu.index}")
            )
            found.append(
                PlacementWarning(
                    "link_slow",
                    f"{where} runs at {shortfall} under load: check the slot, riser and BIOS PCIe settings",
                    gpu_index=gpu.index,
                )
            )
            break
    return found


def _gen_or_zero(gen: int | None) -> int:
    return gen or 0


def _capped(own: int | None, parent: int | None) -> int | None:
    """What a link can reach: the smaller of its two ends' maximums (where the parent says)."""
    if own is None:
        return None
    return min(own, parent) if parent else own


def _shortfall(hop: PcieHop, parent: PcieHop | None) -> str | None:
    gen_max = _capped(hop.link_gen_max, parent.link_gen_max if parent else None)
    width_max = _capped(hop.link_width_max, parent.link_width_max if parent else None)
    parts = []
    if hop.link_gen_current and gen_max and hop.link_gen_current < gen_max:
        parts.append(f"Gen{hop.link_gen_current} while max is Gen{gen_max}")
    if hop.link_width_current and width_max and hop.link_width_current < width_max:
        parts.append(f"x{hop.link_width_current} while max is x{width_max}")
    return " and ".join(parts) or None
