"""Placement warnings in words: what a person reads when a rank, its workers or a link sit badly."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from xfertop.analysis.placement import placement_warnings
from xfertop.model.topology import GpuTopology, PcieHop, ProcessPlacement, Topology, WatchedProcess
from xfertop.sources.topology.source import read_topology

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TWO_NODES = {0: (0, 1, 2, 3), 1: (4, 5, 6, 7)}


def hop(bus_id: str, gen: int = 5, gen_max: int = 5, width: int = 16, width_max: int = 16) -> PcieHop:
    return PcieHop(bus_id, 0x030200, 0x10DE, 0x2335, gen, width, gen_max, width_max)


def gpu(index: int = 0, node: int | None = 0, path: tuple[PcieHop, ...] | None = None) -> GpuTopology:
    bus_id = f"0000:{0x18 + index:02x}:00.0"
    return GpuTopology(
        index=index,
        bus_id=bus_id,
        host_bridge="pci0000:15",
        numa_node=node,
        numa_source="sysfs" if node is not None else "unknown",
        local_cpus=(0, 1, 2, 3),
        pcie_path=path if path is not None else (hop(bus_id), hop("0000:17:00.0")),
    )


def rank(
    number: int = 3,
    gpu_index: int = 0,
    nodes: tuple[int, ...] = (0,),
    memory: dict[int, int] | None = None,
    workers: tuple[ProcessPlacement, ...] = (),
) -> ProcessPlacement:
    return ProcessPlacement(
        pid=4100 + number,
        name="pt_main_thread",
        rank=number,
        gpu_bus_id=f"0000:{0x18 + gpu_index:02x}:00.0",
        allowed_cpus=(0, 1, 2, 3),
        running_cpus=(0,),
        running_nodes=nodes,
        memory_bytes_by_node=memory,
        workers=workers,
    )


def worker(pid: int, cpus: tuple[int, ...]) -> ProcessPlacement:
    return ProcessPlacement(
        pid=pid,
        name="pt_data_worker",
        rank=None,
        gpu_bus_id=None,
        allowed_cpus=cpus,
        running_cpus=cpus[:1],
        running_nodes=(0,),
        memory_bytes_by_node={0: 1},
    )


def topology(
    gpus: tuple[GpuTopology, ...] = (),
    processes: tuple[ProcessPlacement, ...] = (),
    nodes: dict[int, tuple[int, ...]] | None = None,
) -> Topology:
    return Topology(
        timestamp=0.0,
        gpus=gpus,
        links=(),
        numa_cpus=nodes if nodes is not None else TWO_NODES,
        processes=processes,
    )


def messages(t: Topology, under_load: set[int] | None = None) -> list[str]:
    return [w.message for w in placement_warnings(t, under_load or set())]


def test_a_well_placed_machine_has_nothing_to_say() -> None:
    t = topology((gpu(0),), (rank(0, memory={0: 100}, workers=(worker(10, (1, 2)), worker(11, (1, 2)))),))
    assert messages(t, {0}) == []


def test_rank_running_on_the_other_socket() -> None:
    [warning] = placement_warnings(topology((gpu(0, node=0),), (rank(3, nodes=(1,)),)))
    assert warning.kind == "rank_remote_cpu" and warning.pid == 4103 and warning.gpu_index == 0
    assert warning.message.startswith("rank 3 runs on NUMA node 1, its GPU 0 hangs off node 0")


def test_rank_spread_over_both_sockets_is_fine_when_one_is_the_gpus() -> None:
    assert messages(topology((gpu(0, node=0),), (rank(3, nodes=(0, 1)),))) == []


def test_rank_memory_mostly_on_the_other_socket() -> None:
    [warning] = placement_warnings(topology((gpu(0, node=0),), (rank(3, memory={0: 25, 1: 75}),)))
    assert warning.kind == "rank_remote_memory"
    assert warning.message.startswith(
        "rank 3 keeps 75% of its memory on NUMA node 1, its GPU 0 hangs off node 0"
    )


def test_workers_crowded_onto_few_cores() -> None:
    crowded = tuple(worker(20 + i, (4, 5)) for i in range(8))
    [warning] = placement_warnings(topology((gpu(0),), (rank(3, workers=crowded),)))
    assert warning.kind == "workers_crowded"
    assert warning.message.startswith("8 workers of rank 3 share 2 cores (CPUs 4-5)")


def test_as_many_workers_as_cores_is_not_crowded() -> None:
    assert messages(topology((gpu(0),), (rank(3, workers=(worker(20, (4, 5)), worker(21, (4, 5)))),))) == []


def test_a_process_without_rank_is_named_by_pid() -> None:
    plain = replace(rank(3, nodes=(1,)), rank=None)
    assert messages(topology((gpu(0),), (plain,)))[0].startswith("process 4103 (pt_main_thread) runs on")


def test_slow_link_warns_only_under_load() -> None:
    slow = gpu(0, path=(hop("0000:18:00.0", gen=3), hop("0000:17:00.0", gen=3)))
    assert messages(topology((slow,))) == []
    [warning] = placement_warnings(topology((slow,)), {0})
    assert warning.kind == "link_slow"
    assert warning.message.startswith("GPU 0's link runs at Gen3 while max is Gen5 under load")


def test_narrow_link_above_the_gpu_is_named_by_its_bridge() -> None:
    narrow_uplink = gpu(
        0,
        path=(
            hop("0000:18:00.0"),
            hop("0000:17:00.0"),
            hop("0000:16:00.0", width=8),
            hop("0000:15:01.0", width=8),
        ),
    )
    assert messages(topology((narrow_uplink,)), {0}) == [
        "the link of bridge 0000:16:00.0 above GPU 0 runs at x8 while max is x16 under load: check the "
        "slot, riser and BIOS PCIe settings"
    ]


def test_a_gpu_in_a_slower_slot_is_capped_not_slow() -> None:
    capped = gpu(0, path=(hop("0000:18:00.0", gen=4, gen_max=5), hop("0000:17:00.0", gen=4, gen_max=4)))
    warnings = placement_warnings(topology((capped,)), {0})
    assert [(w.kind, w.message) for w in warnings] == [
        ("link_capped", "GPU 0 can do Gen5 but its slot (0000:17:00.0) tops out at Gen4")
    ]


def test_unknown_numa_node_matters_only_with_several_nodes() -> None:
    unknown = gpu(0, node=None)
    assert messages(topology((unknown,), nodes={0: (0, 1)})) == []
    assert messages(topology((unknown,))) == [
        "GPU 0's NUMA node is unknown (sysfs numa_node = -1, and NVML did not say): xfertop cannot check "
        "which CPUs should feed it"
    ]


def test_the_synthetic_server_raises_each_planted_problem_once() -> None:
    t = read_topology(
        FIXTURES / "sysfs" / "synthetic_2s8g",
        FIXTURES / "proc" / "synthetic_2s8g",
        [WatchedProcess(4101, "0000:18:00.0", 0), WatchedProcess(4104, "0000:3b:00.0", 3)],
    )
    kinds = [(w.kind, w.gpu_index, w.pid) for w in placement_warnings(t, gpus_under_load=set(range(8)))]
    assert kinds == [
        ("numa_unknown", 6, None),
        ("numa_unknown", 7, None),
        ("link_capped", 2, None),
        ("link_slow", 5, None),
        ("rank_remote_cpu", 3, 4104),
        ("rank_remote_memory", 3, 4104),
        ("workers_crowded", None, 4104),
    ]
