"""The JSON snapshot: every part of the TUI's data, versioned, with nulls kept and verdicts attached."""

from __future__ import annotations

import json
from dataclasses import replace

from cli.schema import schema_problems
from ui.sample_states import FROZEN_TIME, gpu_state, host_state, jobs_state, no_driver_state, rank
from ui.topology_support import SYNTHETIC_PROC, SYNTHETIC_SYSFS
from xfertop.export.json_snapshot import RECENT_STEPS, SCHEMA, TOP_LEVEL_KEYS, snapshot_dict
from xfertop.model.topology import WatchedProcess
from xfertop.sources.topology.source import read_topology


def test_a_full_snapshot_conforms_and_survives_json() -> None:
    document = snapshot_dict(gpu_state(2), host_state(), jobs_state(), timestamp=FROZEN_TIME)
    assert tuple(document) == TOP_LEVEL_KEYS
    assert document["schema"] == SCHEMA == "xfertop.snapshot/1"
    assert schema_problems(json.loads(json.dumps(document))) == []


def test_gpu_carries_the_labels_the_tui_shows() -> None:
    document = snapshot_dict(gpu_state(1, gen=3), None, None, timestamp=FROZEN_TIME)
    summary = document["gpus"][0]["link_summary"]
    assert summary["rx_label"] == "RX 54.9 GB/s of 15.8 (Gen3 x16)"
    assert round(summary["max_capacity_bytes_per_s"] / 1e9, 1) == 63.0
    assert "Gen3 x16" in summary["warning"]


def test_no_driver_gives_an_empty_gpu_list_and_the_reason() -> None:
    document = snapshot_dict(no_driver_state(), host_state(), None, timestamp=FROZEN_TIME)
    assert document["gpus"] == []
    assert document["driver"]["error"].startswith("no NVIDIA driver found")
    assert document["jobs"]["error"] == "the jobs source did not answer"


def test_missing_values_stay_null() -> None:
    document = snapshot_dict(gpu_state(1), None, None, timestamp=FROZEN_TIME)
    assert document["host"] is None
    assert document["gpus"][0]["lost_reason"] is None


def test_host_processes_carry_the_cuda_host_alloc_figure_read_from_proc() -> None:
    host = host_state()
    trainer = replace(host.processes[0], cuda_host_alloc_bytes=1034 * 1024**2, cuda_host_alloc_age_s=2.5)
    document = json.loads(
        json.dumps(snapshot_dict(None, replace(host, processes=(trainer,)), None, timestamp=FROZEN_TIME))
    )
    [process] = document["host"]["processes"]
    assert process["cuda_host_alloc_bytes"] == 1034 * 1024**2 and process["cuda_host_alloc_age_s"] == 2.5
    assert process["shmem_rss_bytes"] is None
    [worker] = process["children"]
    assert worker["cuda_host_alloc_bytes"] is None, "workers are not read: null"


def test_jobs_carry_a_verdict_a_window_and_recent_steps() -> None:
    document = snapshot_dict(
        None, None, jobs_state(rank(), rank(rank_index=1, world=2)), timestamp=FROZEN_TIME
    )
    job = document["jobs"]["items"][0]
    assert job["verdict"]["kind"] == "input-bound"
    assert job["verdict"]["headline"]
    first = job["ranks"][0]
    assert "steps" not in first
    assert len(first["recent_steps"]) == RECENT_STEPS and first["steps_recorded"] == 60
    window = first["window"]
    # The starved sample rank: the GPU idles ~37% of each step in the wait, ~9% through its copy calls.
    assert 0.3 < window["idle"]["wait"] < 0.45 and 0.05 < window["idle"]["copy"] < 0.1
    assert abs(window["gpu_idle_share"] - sum(window["idle"].values())) < 1e-9
    assert window["loop_pre_share"] == 0.0 and window["partitioned"] is False
    step = first["recent_steps"][-1]
    assert step["gpu_gap_ms"] == 38.0 and {"loop_pre_ms", "sync_ms", "loop_post_ms", "synced"} <= set(step)


def test_topology_carries_the_matrix_paths_placement_and_warnings_in_words() -> None:
    topology = read_topology(SYNTHETIC_SYSFS, SYNTHETIC_PROC, [WatchedProcess(4104, "0000:3b:00.0", rank=3)])
    document = json.loads(
        json.dumps(snapshot_dict(gpu_state(1), None, None, timestamp=FROZEN_TIME, topology=topology))
    )
    assert schema_problems(document) == []
    part = document["topology"]
    assert part["gpu_source"] == "sysfs" and len(part["gpus"]) == 8
    assert part["links"][6][7] == "PXB" and part["numa_cpus"]["1"][0] == 32
    gpu5 = part["gpus"][5]
    assert gpu5["numa_node"] == 1 and gpu5["pcie_path"][0]["link_gen_current"] == 3
    [rank3] = part["processes"]
    assert rank3["rank"] == 3 and rank3["running_nodes"] == [1] and len(rank3["workers"]) == 8
    kinds = [warning["kind"] for warning in part["warnings"]]
    assert kinds == [
        "numa_unknown",
        "numa_unknown",
        "link_capped",
        "rank_remote_cpu",
        "rank_remote_memory",
        "workers_crowded",
    ]  # no link_slow: GPU 5 carries no traffic in this GPU state
    assert part["warnings"][2]["message"] == "GPU 2 can do Gen5 but its slot (0000:39:00.0) tops out at Gen4"


def test_without_a_topology_reading_the_key_is_null() -> None:
    assert snapshot_dict(None, None, None, timestamp=FROZEN_TIME)["topology"] is None
