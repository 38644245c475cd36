"""On a real GPU: the topology agrees with NVML and with ``nvidia-smi topo -m``.

Run on the GPU machine: ``XFERTOP_RESULTS_DIR=$OUT pytest -m gpu tests/gpu/test_topology_real.py``.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from gpu_results import write_result
from xfertop.sources.gpu.nvml_api import NvmlApi
from xfertop.sources.topology.source import read_topology

pytestmark = pytest.mark.gpu


def test_every_nvml_gpu_is_found_in_sysfs_with_a_numa_answer() -> None:
    api = NvmlApi()
    assert api.init() is None
    try:
        topology = read_topology(nvml=api)
    finally:
        api.shutdown()
    write_result("topology_real", topology)
    assert topology.gpu_source == "nvml" and topology.gpus
    for gpu in topology.gpus:
        assert gpu.error is None and gpu.pcie_path, gpu
        assert gpu.pcie_path[0].bus_id == gpu.bus_id
        if len(topology.numa_cpus) > 1:
            assert gpu.numa_node is not None, f"GPU {gpu.index}: neither sysfs nor NVML knows its node"
    assert [row[i] for i, row in enumerate(topology.links)] == ["X"] * len(topology.gpus)
    theirs = _nvidia_smi_matrix(len(topology.gpus))
    if theirs is not None:
        assert [list(row) for row in topology.links] == theirs


def _nvidia_smi_matrix(count: int) -> list[list[str]] | None:
    nvidia_smi = shutil.which("nvidia-smi")
    if nvidia_smi is None:
        return None
    text = subprocess.run([nvidia_smi, "topo", "-m"], capture_output=True, text=True, timeout=60).stdout
    rows = [
        line.split()[1 : 1 + count]
        for line in text.splitlines()
        if line.split()[:1] and line.split()[0] in {f"GPU{i}" for i in range(count)}
    ]
    return rows if len(rows) == count else None
