"""NUMA nodes and their CPUs from /sys/devices/system/node (below ``sysfs_root``)."""

from __future__ import annotations

import os
from pathlib import Path

from xfertop.sources.topology.sysfs_pci import parse_cpulist


def numa_cpus(sysfs_root: Path) -> dict[int, tuple[int, ...]]:
    """NUMA node -> its CPUs. Empty where the kernel has no NUMA support (then treat it as one node)."""
    node_dir = sysfs_root / "devices" / "system" / "node"
    try:
        names = os.listdir(node_dir)
    except OSError:
        return {}
    nodes: dict[int, tuple[int, ...]] = {}
    for name in names:
        if name.startswith("node") and name[4:].isdigit():
            try:
                text = (node_dir / name / "cpulist").read_text()
            except OSError:
                continue
            nodes[int(name[4:])] = parse_cpulist(text)
    return dict(sorted(nodes.items()))


def node_of_cpu(nodes: dict[int, tuple[int, ...]]) -> dict[int, int]:
    """CPU -> NUMA node, the inverse of ``numa_cpus``."""
    return {cpu: node for node, cpus in nodes.items() for cpu in cpus}
