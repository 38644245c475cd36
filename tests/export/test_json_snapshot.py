"""The JSON snapshot: every part of the TUI's data, versioned, with nulls kept and verdicts attached."""

from __future__ import annotations

import json

from cli.schema import schema_problems
from ui.sample_states import FROZEN_TIME, gpu_state, host_state, jobs_state, no_driver_state, rank
from xfertop.export.json_snapshot import RECENT_STEPS, SCHEMA, TOP_LEVEL_KEYS, snapshot_dict


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


def test_jobs_carry_a_verdict_a_window_and_recent_steps() -> None:
    document = snapshot_dict(None, None, jobs_state(rank(), rank(rank_index=1, world=2)),
                             timestamp=FROZEN_TIME)
    job = document["jobs"]["items"][0]
    assert job["verdict"]["kind"] == "input-bound"
    assert job["verdict"]["headline"]
    first = job["ranks"][0]
    assert "steps" not in first
    assert len(first["recent_steps"]) == RECENT_STEPS and first["steps_recorded"] == 60
    assert 0.3 < first["window"]["gpu_idle_share"] < 0.45
