"""Load the step windows in tests/fixtures/windows/ as the viewer would hold them (RankState)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xfertop.model.jobs import RankState, StepRecord

WINDOWS_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "windows"


@dataclass(frozen=True)
class WindowFixture:
    name: str
    description: str
    source: str
    expected_kind: str
    expected_severity: str
    context: dict[str, Any]
    ranks: tuple[RankState, ...]


def rank_state(
    rank: int | None,
    steps: list[dict[str, Any]],
    dataloader_workers: int | None,
    world_size: int = 1,
    device: str = "cuda:0",
) -> RankState:
    return RankState(
        pid=4000 + (rank or 0),
        host="node0",
        rank=rank,
        local_rank=rank,
        world_size=world_size,
        job_key="run:fixture",
        device=device,
        argv=("train.py",),
        status="live",
        heartbeat_age_s=0.1,
        steps=tuple(StepRecord(**step) for step in steps),
        pinned_host_bytes=None,
        dataloader_workers=dataloader_workers,
        reporter_errors=0,
        reporter_disabled=False,
        ring_path=f"/tmp/xfertop-test/{rank}.ring",
    )


def load_window(name: str) -> WindowFixture:
    doc = json.loads((WINDOWS_DIR / f"{name}.json").read_text())
    world_size = len(doc["ranks"])
    ranks = tuple(
        rank_state(r["rank"], r["steps"], r.get("dataloader_workers"), world_size, r.get("device", "cuda:0"))
        for r in doc["ranks"]
    )
    return WindowFixture(
        name,
        doc["description"],
        doc["source"],
        doc["expected"]["kind"],
        doc["expected"]["severity"],
        doc.get("context", {}),
        ranks,
    )


def window_names() -> list[str]:
    return sorted(path.stem for path in WINDOWS_DIR.glob("*.json"))
