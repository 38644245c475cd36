"""Topology from sysfs and /proc trees: the synthetic 2-socket 8-GPU server, this machine's captured
tree (a VM without GPU), this machine live, and NVML (faked after the H200 recording) for NVLink and
memory affinity."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from fakes.fake_pynvml import FakeGpu, FakePynvml, TopologyPynvml
from xfertop.model.topology import WatchedProcess
from xfertop.sources.gpu.nvml_api import NvmlApi
from xfertop.sources.topology.source import TopologySource, read_topology
from xfertop.sources.topology.sysfs_pci import (
    link_gen,
    normalise_bus_id,
    parse_cpulist,
    parse_link_speed_gt_per_s,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SYNTHETIC_SYSFS = FIXTURES / "sysfs" / "synthetic_2s8g"
SYNTHETIC_PROC = FIXTURES / "proc" / "synthetic_2s8g"
VM_SYSFS = FIXTURES / "sysfs" / "vm_virtio_no_gpu"
NODE0 = (*range(0, 32), *range(64, 96))

EXPECTED_LINKS = [
    "X    PIX  NODE NODE SYS  SYS  SYS  SYS",
    "PIX  X    NODE NODE SYS  SYS  SYS  SYS",
    "NODE NODE X    PIX  SYS  SYS  SYS  SYS",
    "NODE NODE PIX  X    SYS  SYS  SYS  SYS",
    "SYS  SYS  SYS  SYS  X    PIX  SYS  SYS",
    "SYS  SYS  SYS  SYS  PIX  X    SYS  SYS",
    "SYS  SYS  SYS  SYS  SYS  SYS  X    PXB",
    "SYS  SYS  SYS  SYS  SYS  SYS  PXB  X",
]


def test_sysfs_value_parsers() -> None:
    assert parse_cpulist("0-3,8,10-11\n") == (0, 1, 2, 3, 8, 10, 11)
    assert parse_cpulist("") == () and parse_cpulist(None) == ()
    assert parse_link_speed_gt_per_s("32.0 GT/s PCIe") == 32.0
    assert parse_link_speed_gt_per_s("8 GT/s") == 8.0  # older kernels
    assert parse_link_speed_gt_per_s("Unknown") is None
    assert [link_gen(s) for s in (2.5, 5.0, 8.0, 16.0, 32.0, 64.0)] == [1, 2, 3, 4, 5, 6]
    assert normalise_bus_id("00000000:06:00.0") == "0000:06:00.0"
    assert normalise_bus_id("0000:BC:00.0") == "0000:bc:00.0"


def test_synthetic_server_lists_its_eight_nvidia_gpus_and_ignores_the_nic_and_bmc() -> None:
    topology = read_topology(SYNTHETIC_SYSFS, SYNTHETIC_PROC)
    assert topology.gpu_source == "sysfs" and topology.error is None
    assert [g.bus_id for g in topology.gpus] == [
        "0000:18:00.0",
        "0000:19:00.0",
        "0000:3a:00.0",
        "0000:3b:00.0",
        "0000:9a:00.0",
        "0000:9b:00.0",
        "0000:bc:00.0",
        "0000:bd:00.0",
    ]
    assert [g.host_bridge for g in topology.gpus] == ["pci0000:15"] * 2 + ["pci0000:37"] * 2 + [
        "pci0000:97"
    ] * 2 + ["pci0000:b7"] * 2
    assert [g.numa_node for g in topology.gpus] == [0, 0, 0, 0, 1, 1, None, None]
    assert [g.numa_source for g in topology.gpus][-2:] == ["unknown", "unknown"]
    assert topology.gpus[0].local_cpus == NODE0
    assert topology.numa_cpus[1] == (*range(32, 64), *range(96, 128))


def test_pcie_path_walks_from_the_gpu_up_to_its_root_port_with_each_link() -> None:
    gpu5 = read_topology(SYNTHETIC_SYSFS).gpus[5]
    assert [hop.bus_id for hop in gpu5.pcie_path] == [
        "0000:9b:00.0",
        "0000:99:01.0",
        "0000:98:00.0",
        "0000:97:01.0",
    ]
    gpu_hop, downstream_port = gpu5.pcie_path[0], gpu5.pcie_path[1]
    assert (gpu_hop.pci_class, gpu_hop.vendor_id, gpu_hop.device_id) == (0x030200, 0x10DE, 0x2335)
    assert (gpu_hop.link_gen_current, gpu_hop.link_gen_max) == (3, 5)
    assert (gpu_hop.link_width_current, gpu_hop.link_width_max) == (16, 16)
    assert gpu_hop.link_speed_current_gt_per_s == 8.0
    assert downstream_port.link_gen_current == 3  # both ends of a link report it
    assert len(read_topology(SYNTHETIC_SYSFS).gpus[6].pcie_path) == 6  # two cascaded switches


def test_gpu_matrix_reads_like_nvidia_smi_topo() -> None:
    links = read_topology(SYNTHETIC_SYSFS).links
    assert [" ".join(f"{cell:4}" for cell in row).rstrip() for row in links] == EXPECTED_LINKS


def test_ranks_and_their_workers_are_placed_on_numa_nodes() -> None:
    topology = read_topology(
        SYNTHETIC_SYSFS,
        SYNTHETIC_PROC,
        [WatchedProcess(4101, "0000:18:00.0", rank=0), WatchedProcess(4104, "00000000:3B:00.0", rank=3)],
    )
    rank0, rank3 = topology.processes
    assert rank0.name == "pt_main_thread" and rank0.running_cpus == (2, 5, 64) and rank0.running_nodes == (0,)
    assert rank0.allowed_cpus == NODE0 and rank0.memory_bytes_by_node == {0: 500000 * 4096}
    assert [w.pid for w in rank0.workers] == [4201, 4202, 4203, 4204]
    assert rank3.gpu_bus_id == "0000:3b:00.0"  # normalised from NVML's spelling
    assert rank3.running_nodes == (1,)
    assert rank3.memory_bytes_by_node == {0: 100000 * 4096, 1: 400000 * 4096}
    assert len(rank3.workers) == 8 and {w.allowed_cpus for w in rank3.workers} == {(40, 41)}


def test_a_process_that_is_gone_is_placed_with_a_sentence() -> None:
    gone = read_topology(SYNTHETIC_SYSFS, SYNTHETIC_PROC, [WatchedProcess(999, rank=1)]).processes[0]
    assert gone.error == "process 999 has exited" and gone.rank == 1 and gone.workers == ()


def test_captured_vm_without_gpu_gives_an_empty_topology_with_the_reason() -> None:
    topology = read_topology(VM_SYSFS, SYNTHETIC_PROC)
    assert topology.gpus == () and topology.links == () and topology.gpu_source == "none"
    assert topology.error is not None and topology.error.startswith("no NVIDIA GPU found")
    assert topology.numa_cpus == {0: (0, 1)}


def test_this_machine_live_places_a_process_and_its_worker() -> None:
    worker_code = "import sys; print('ready', flush=True); sys.stdin.read()"
    parent_code = (
        "import subprocess, sys; w = subprocess.Popen([sys.executable, '-c', sys.argv[1]], "
        "stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True); w.stdout.readline(); "
        "print('ready', flush=True); sys.stdin.read(); w.stdin.close(); w.wait()"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", parent_code, worker_code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert parent.stdout is not None and parent.stdout.readline().strip() == "ready"
        topology = read_topology(processes=[WatchedProcess(parent.pid, rank=0)])
        affinity = tuple(sorted(os.sched_getaffinity(parent.pid)))
    finally:
        assert parent.stdin is not None
        parent.stdin.close()
        parent.wait(timeout=30)
    if not Path("/dev/nvidiactl").exists():
        assert topology.gpus == () and "no NVIDIA GPU found" in (topology.error or "")
    placed = topology.processes[0]
    assert placed.error is None and placed.allowed_cpus == affinity
    assert placed.running_nodes and set(placed.running_nodes) <= set(topology.numa_cpus)
    if Path("/proc/self/numa_maps").exists():  # kernels built without NUMA have no numa_maps
        assert placed.memory_bytes_by_node and sum(placed.memory_bytes_by_node.values()) > 0
    assert len(placed.workers) == 1 and (placed.workers[0].name or "").startswith("python")


def _gpus(*bus_ids: str) -> list[FakeGpu]:
    gpus = []
    for index, bus_id in enumerate(bus_ids):
        gpu = FakeGpu(index)
        gpu.answers["nvmlDeviceGetPciInfo"] = SimpleNamespace(busId=bus_id.encode())
        gpus.append(gpu)
    return gpus


def _nvml(lib: FakePynvml) -> NvmlApi:
    api = NvmlApi(lib=lib)
    assert api.init() is None
    return api


def test_nvml_lists_the_gpus_and_names_them() -> None:
    lib = TopologyPynvml(_gpus("00000000:18:00.0", "00000000:19:00.0"))
    topology = read_topology(SYNTHETIC_SYSFS, nvml=_nvml(lib))
    assert topology.gpu_source == "nvml"
    assert [(g.index, g.bus_id, g.name) for g in topology.gpus] == [
        (0, "0000:18:00.0", "NVIDIA H200"),
        (1, "0000:19:00.0", "NVIDIA H200"),
    ]
    assert topology.links == (("X", "PIX"), ("PIX", "X"))  # NvLinkState NOT_SUPPORTED, as recorded


def test_nvml_memory_affinity_fills_in_a_numa_node_sysfs_does_not_know() -> None:
    lib = TopologyPynvml(_gpus("00000000:BC:00.0"), memory_affinity=[0b10, 0, 0, 0])
    gpu = read_topology(SYNTHETIC_SYSFS, nvml=_nvml(lib)).gpus[0]
    assert (gpu.numa_node, gpu.numa_source) == (1, "nvml")


def test_nvml_memory_affinity_of_several_nodes_stays_unknown() -> None:
    lib = TopologyPynvml(_gpus("00000000:BC:00.0"), memory_affinity=[0b11, 0, 0, 0])
    gpu = read_topology(SYNTHETIC_SYSFS, nvml=_nvml(lib)).gpus[0]
    assert (gpu.numa_node, gpu.numa_source) == (None, "unknown")


def test_direct_nvlinks_and_nvswitch_links_show_as_nv_counts() -> None:
    direct = TopologyPynvml(
        _gpus("00000000:18:00.0", "00000000:19:00.0"),
        nvlinks={0: ["00000000:19:00.0"] * 4, 1: ["00000000:18:00.0"] * 4},
    )
    assert read_topology(SYNTHETIC_SYSFS, nvml=_nvml(direct)).links == (("X", "NV4"), ("NV4", "X"))
    switched = TopologyPynvml(
        _gpus("00000000:18:00.0", "00000000:9a:00.0"),
        nvlinks={0: ["00000000:c1:00.0"] * 18, 1: ["00000000:c2:00.0"] * 18},
    )
    assert read_topology(SYNTHETIC_SYSFS, nvml=_nvml(switched)).links == (("X", "NV18"), ("NV18", "X"))


def test_nvlinks_are_asked_once_per_set_of_gpus_when_cached() -> None:
    lib = TopologyPynvml(
        _gpus("00000000:18:00.0", "00000000:19:00.0"),
        nvlinks={0: ["00000000:19:00.0"] * 4, 1: ["00000000:18:00.0"] * 4},
    )
    api, cache = _nvml(lib), {}
    first = read_topology(SYNTHETIC_SYSFS, nvml=api, nvlink_cache=cache)
    asked = lib.nvlink_state_calls
    second = read_topology(SYNTHETIC_SYSFS, nvml=api, nvlink_cache=cache)
    assert first.links == second.links == (("X", "NV4"), ("NV4", "X"))
    assert asked == 2 * 18 and lib.nvlink_state_calls == asked


def test_a_lost_gpu_drops_out_of_the_nvml_list_without_raising() -> None:
    gpus = _gpus("00000000:18:00.0", "00000000:19:00.0")
    gpus[1].lost = True
    topology = read_topology(SYNTHETIC_SYSFS, nvml=_nvml(TopologyPynvml(gpus)))
    assert [g.bus_id for g in topology.gpus] == ["0000:18:00.0"]


def test_a_gpu_known_to_nvml_but_missing_in_sysfs_says_so() -> None:
    topology = read_topology(VM_SYSFS, nvml=_nvml(TopologyPynvml(_gpus("00000000:00:06.0"))))
    gpu = topology.gpus[0]
    assert gpu.pcie_path == () and gpu.numa_node == 0 and gpu.numa_source == "nvml"
    assert gpu.error == (
        f"GPU 0 (0000:00:06.0) has no entry under {VM_SYSFS}/bus/pci/devices: PCIe path unknown"
    )


def test_topology_source_publishes_what_read_topology_reads() -> None:
    source = TopologySource(sysfs_root=SYNTHETIC_SYSFS, proc_root=SYNTHETIC_PROC)
    source.watch([WatchedProcess(4104, "0000:3b:00.0", rank=3)])
    snapshot = source.sample_once()
    assert source.latest() is snapshot and len(snapshot.gpus) == 8 and snapshot.processes[0].rank == 3


def test_topology_source_can_start_its_own_nvml_and_reads_sysfs_without_a_driver() -> None:
    lib = TopologyPynvml(_gpus("00000000:18:00.0"))
    source = TopologySource(sysfs_root=SYNTHETIC_SYSFS, nvml=NvmlApi(lib=lib), start_nvml=True)
    assert source.sample_once().gpu_source == "nvml"
    source.close()
    assert lib.calls[-1] == "nvmlShutdown"
    no_driver = FakePynvml(gpus=[], init_error="NVML_ERROR_LIBRARY_NOT_FOUND")
    fallback = TopologySource(sysfs_root=SYNTHETIC_SYSFS, nvml=NvmlApi(lib=no_driver), start_nvml=True)
    topology = fallback.sample_once()
    assert topology.gpu_source == "sysfs" and len(topology.gpus) == 8
    fallback.close()
    assert "nvmlShutdown" not in no_driver.calls
