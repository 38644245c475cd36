"""Topology read from the sysfs tree captured on the lent H200 (benchmarks/capture_sysfs.py, 2026-11-29)."""

from __future__ import annotations

from pathlib import Path

from xfertop.sources.topology.source import read_topology

H200_SYSFS = Path(__file__).resolve().parents[1] / "fixtures" / "sysfs" / "h200"


def test_the_h200_is_found_without_a_driver_with_its_gen5_x16_link() -> None:
    topology = read_topology(sysfs_root=H200_SYSFS, proc_root=H200_SYSFS / "no-proc")
    [gpu] = topology.gpus
    assert gpu.bus_id == "0000:00:06.0"
    hop = gpu.pcie_path[0]
    assert (hop.link_gen_current, hop.link_width_current) == (5, 16)
    assert (hop.link_gen_max, hop.link_width_max) == (5, 16)
    # This VM's sysfs says numa_node = -1; only NVML's memory affinity knew node 0 (topology_real.json).
    assert gpu.numa_node is None and gpu.numa_source == "unknown"
