"""(i) A synthetic dataset through a real DataLoader, swept over num_workers x pin_memory."""

from __future__ import annotations

import os
import time
from typing import Any, cast

from xfertop.bench.cases import CaseContext
from xfertop.bench.cases.copies import _result
from xfertop.model.bench import CaseResult, Measurement

ITEM_SHAPE = (3, 224, 224)
BATCH_SIZE = 64
PREFETCH_FACTOR = 2
WARMUP_BATCHES = 4
TIMED_BATCHES = 24


def worker_plan(cpu_count: int) -> list[int]:
    """0, 2, 4, 8 ... doubling up to the number of cores (which is always included)."""
    plan = [0]
    workers = 2
    while workers < cpu_count:
        plan.append(workers)
        workers *= 2
    if cpu_count >= 2:
        plan.append(cpu_count)
    return plan


def pinned_cost_bytes(
    batch_bytes: int, workers: int, pin_memory: bool, prefetch_factor: int = PREFETCH_FACTOR
) -> int:
    """Pinned host memory the loader holds: batch bytes x prefetch x workers (one batch when in-process)."""
    if not pin_memory:
        return 0
    return batch_bytes * prefetch_factor * max(workers, 1)


class SyntheticImages:
    """A map-style dataset of random uint8 images with a little CPU work per item, like light decoding."""

    def __init__(self, length: int) -> None:
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> Any:
        import torch

        generator = torch.Generator().manual_seed(index)
        image = torch.randint(0, 256, ITEM_SHAPE, dtype=torch.uint8, generator=generator)
        return image.flip(-1).contiguous()


def _run_loader(ctx: CaseContext, workers: int, pin_memory: bool) -> tuple[float, float]:
    """(batches per second, mean data wait ms per step) over the timed batches."""
    import torch
    from torch.utils.data import DataLoader, Dataset

    dev = ctx.ops.device(ctx.gpu_index)  # type: ignore[attr-defined]
    # A Dataset by shape (__getitem__, __len__), not by class: subclassing would import torch with the module.
    dataset = cast("Dataset[Any]", SyntheticImages(BATCH_SIZE * (WARMUP_BATCHES + TIMED_BATCHES)))
    loader = DataLoader(
        dataset,
        batch_size=BATCH_SIZE,
        num_workers=workers,
        pin_memory=pin_memory,
        prefetch_factor=PREFETCH_FACTOR if workers else None,
    )
    weights = torch.randn(224, 224, device=dev)
    wait_ns = 0
    batches = iter(loader)
    for step in range(WARMUP_BATCHES + TIMED_BATCHES):
        if step == WARMUP_BATCHES:
            torch.cuda.synchronize(dev)
            start_ns, wait_ns = time.perf_counter_ns(), 0
        asked_ns = time.perf_counter_ns()
        batch = next(batches)
        wait_ns += time.perf_counter_ns() - asked_ns
        x = batch.to(dev, non_blocking=pin_memory).float()
        (x @ weights).sum()
    torch.cuda.synchronize(dev)
    elapsed_s = (time.perf_counter_ns() - start_ns) / 1e9
    del batches
    return TIMED_BATCHES / elapsed_s, wait_ns / 1e6 / TIMED_BATCHES


def dataloader(ctx: CaseContext) -> CaseResult:
    start_s = time.perf_counter()
    cpus = len(os.sched_getaffinity(0))
    batch_bytes = BATCH_SIZE * ITEM_SHAPE[0] * ITEM_SHAPE[1] * ITEM_SHAPE[2]
    plan = [(w, pin) for w in worker_plan(cpus) for pin in (False, True)]
    rows = []
    for i, (workers, pin_memory) in enumerate(plan):
        ctx.progress(i / len(plan), f"num_workers={workers} pin_memory={pin_memory}")
        per_s, wait_ms = _run_loader(ctx, workers, pin_memory)
        rows.append(
            Measurement(
                label=f"num_workers={workers} pin_memory={pin_memory}",
                direction="h2d",
                memory="pinned" if pin_memory else "pageable",
                size_bytes=batch_bytes,
                value=round(per_s, 2),
                unit="batch/s",
                gpu_index=ctx.gpu_index,
                extra={
                    "data_wait_ms": round(wait_ms, 3),
                    "workers": float(workers),
                    "pinned_cost_bytes": float(pinned_cost_bytes(batch_bytes, workers, pin_memory)),
                },
            )
        )
    return _result(
        "dataloader",
        "DataLoader: num_workers x pin_memory",
        rows,
        start_s,
        (
            f"batch {BATCH_SIZE} x {ITEM_SHAPE} uint8, {TIMED_BATCHES} timed batches after "
            f"{WARMUP_BATCHES}; one run per setting, so read trends, not digits",
        ),
    )
