"""How two GPUs reach each other over PCIe, from their sysfs paths: the legend of ``nvidia-smi topo -m``.

A path is the chain under /sys/devices: ("pci0000:00", root port, switch ports..., the GPU). Where NVML
reports NVLinks between two GPUs, "NV<n>" replaces the PCIe answer (see sources.topology).
"""

from __future__ import annotations

from xfertop.model.topology import GpuLink


def _common_prefix_length(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    length = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        length += 1
    return length


def pcie_link(
    path_a: tuple[str, ...],
    path_b: tuple[str, ...],
    node_a: int | None,
    node_b: int | None,
    numa_node_count: int,
) -> GpuLink:
    """X, PIX, PXB, PHB, NODE or SYS for two GPUs given their sysfs paths and NUMA nodes.

    - different host bridges: NODE on one NUMA node, SYS across nodes (SYS also when a node is
      unknown on a machine with several nodes: the path may cross the socket link);
    - same host bridge, paths parting at it: PHB;
    - parting below it: PIX when each GPU is at most one bridge below the meeting point (one switch),
      PXB when more bridges are in the way (switches in a chain).
    """
    if path_a == path_b:
        return "X"
    if not path_a or not path_b or path_a[0] != path_b[0]:
        if node_a is not None and node_a == node_b:
            return "NODE"
        if node_a is None and node_b is None and numa_node_count <= 1:
            return "NODE"
        return "SYS"
    shared = _common_prefix_length(path_a, path_b)
    if shared <= 1:
        return "PHB"
    bridges_below_a = len(path_a) - shared - 1
    bridges_below_b = len(path_b) - shared - 1
    return "PIX" if max(bridges_below_a, bridges_below_b) <= 1 else "PXB"
