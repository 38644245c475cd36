"""Step records for tests, by keyword: the host's step in its six parts (the model is what is left of the
wall, as StepRecord.model_ms says), and the GPU's measured idle gap where there is one."""

from __future__ import annotations

from xfertop.model.jobs import StepRecord


def step_record(
    step: int,
    *,
    model_ms: float = 0.0,
    wait_ms: float = 0.0,
    loop_pre_ms: float = 0.0,
    copy_ms: float = 0.0,
    sync_ms: float = 0.0,
    loop_post_ms: float = 0.0,
    gap_ms: float | None = None,
    wall_ms: float | None = None,
    h2d_bytes: int = 0,
    samples: int = 32,
    pinned: bool = False,
    pageable_non_blocking: bool = False,
    **flags: bool,
) -> StepRecord:
    """A step whose wall is its parts plus ``model_ms`` (or ``wall_ms`` where given: the model is then
    what is left)."""
    parts = wait_ms + loop_pre_ms + copy_ms + sync_ms + loop_post_ms
    return StepRecord(
        step=step,
        wall_ms=parts + model_ms if wall_ms is None else wall_ms,
        data_wait_ms=wait_ms,
        copy_cpu_ms=copy_ms,
        loop_pre_ms=loop_pre_ms,
        sync_ms=sync_ms,
        loop_post_ms=loop_post_ms,
        gpu_gap_ms=gap_ms,
        h2d_bytes=h2d_bytes,
        samples=samples,
        pinned=pinned,
        pageable_non_blocking=pageable_non_blocking,
        **flags,  # type: ignore[arg-type]
    )
