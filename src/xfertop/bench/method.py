"""How every copy is timed: the method nvbandwidth uses, through a backend's primitive operations.

Buffers are allocated and written (so every page is touched) before any timing; the first sample is a
warm-up, reported apart and never in the median; each sample times many copies between one pair of
events; small pinned copies queue behind a spin kernel so enqueue cost stays out of the interval; the
destination is cleared first and compared with the source's pattern afterwards.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from statistics import median
from typing import Any, Literal, Protocol

from xfertop.model.bench import Direction, Measurement, MemoryKind

MIB = 1024 * 1024
GIB = 1024 * MIB
#: Bytes each sample moves (in `count` copies of one size); 2 GiB keeps a Gen5 sample near 40 ms.
SAMPLE_TARGET_BYTES = 2 * GIB
MAX_COPIES_PER_SAMPLE = 200
MIN_COPIES_PER_SAMPLE = 4
#: Below this size, pinned async copies are enqueued behind a spin kernel (enqueue cost ~ copy time).
PRE_BLOCK_BELOW_BYTES = 4 * MIB


class CopyOps(Protocol):
    """The primitive operations a backend provides: CUDA through torch, or plain host memory for CI."""

    name: str

    def device_count(self) -> int: ...
    def alloc(self, nbytes: int, memory: MemoryKind, gpu_index: int = 0) -> Any: ...
    def fill_pattern(self, buf: Any, seed: int) -> None: ...
    def clear(self, buf: Any) -> None: ...
    def verify_pattern(self, buf: Any, seed: int) -> bool: ...
    def time_copies_s(
        self, dst: Any, src: Any, count: int, *, non_blocking: bool, pre_block: bool, wall_clock: bool = False
    ) -> float: ...
    def time_bidir_s(
        self, h2d: tuple[Any, Any], d2h: tuple[Any, Any], count: int
    ) -> tuple[float, float, float]:
        """(total, h2d alone, d2h alone) seconds for `count` copies each way, both directions at once."""
        ...

    def free_device_bytes(self, gpu_index: int = 0) -> int: ...


def copies_per_sample(size_bytes: int, target_bytes: int = SAMPLE_TARGET_BYTES) -> int:
    return max(MIN_COPIES_PER_SAMPLE, min(MAX_COPIES_PER_SAMPLE, math.ceil(target_bytes / size_bytes)))


def gb_per_s(size_bytes: int, count: int, elapsed_s: float) -> float:
    return size_bytes * count / elapsed_s / 1e9 if elapsed_s > 0 else float("inf")


@dataclass(frozen=True)
class Summary:
    median: float
    low: float
    high: float
    samples: tuple[float, ...]
    warmup: float | None


def summarise(values: list[float], warmup: float | None = None) -> Summary:
    if not values:
        raise ValueError("no samples to summarise")
    return Summary(median(values), min(values), max(values), tuple(round(v, 4) for v in values), warmup)


def sampled(sample_fn: Callable[[], float], samples: int) -> Summary:
    """Run one warm-up and `samples` timed samples of a figure."""
    if samples < 1:
        raise ValueError("need at least one sample")
    warmup = sample_fn()
    return summarise([sample_fn() for _ in range(samples)], warmup)


def row_from(
    summary: Summary,
    *,
    label: str,
    direction: Direction,
    memory: MemoryKind | Literal["-"],
    size_bytes: int,
    verified: bool | None = None,
    unit: str = "GB/s",
    gpu_index: int | None = None,
    extra: dict[str, float] | None = None,
) -> Measurement:
    return Measurement(
        label=label,
        direction=direction,
        memory=memory,
        size_bytes=size_bytes,
        value=round(summary.median, 4),
        unit=unit,
        samples=summary.samples,
        value_min=round(summary.low, 4),
        value_max=round(summary.high, 4),
        warmup_value=None if summary.warmup is None else round(summary.warmup, 4),
        verified=verified,
        gpu_index=gpu_index,
        extra=extra or {},
    )


def measure_copy(
    ops: CopyOps,
    *,
    direction: Direction,
    memory: MemoryKind,
    size_bytes: int,
    samples: int,
    non_blocking: bool = True,
    wall_clock: bool = False,
    gpu_index: int = 0,
    target_bytes: int = SAMPLE_TARGET_BYTES,
    label: str | None = None,
    host: Any = None,
) -> Measurement:
    """Allocate, touch, time and verify one copy direction at one size; one row in GB/s.

    `host` may bring a host buffer allocated by the caller (the NUMA case pins its own pages).
    """
    host = ops.alloc(size_bytes, memory, gpu_index) if host is None else host
    device = ops.alloc(size_bytes, "device", gpu_index)
    src, dst = (host, device) if direction == "h2d" else (device, host)
    seed = size_bytes % 9973 + 1
    ops.fill_pattern(src, seed)
    ops.clear(dst)
    count = copies_per_sample(size_bytes, target_bytes)
    pre_block = memory == "pinned" and non_blocking and size_bytes < PRE_BLOCK_BELOW_BYTES

    def one_sample() -> float:
        elapsed_s = ops.time_copies_s(
            dst, src, count, non_blocking=non_blocking, pre_block=pre_block, wall_clock=wall_clock
        )
        return gb_per_s(size_bytes, count, elapsed_s)

    summary = sampled(one_sample, samples)
    verified = ops.verify_pattern(dst, seed)
    return row_from(
        summary,
        label=label or f"{memory} {direction.upper()}",
        direction=direction,
        memory=memory,
        size_bytes=size_bytes,
        verified=verified,
        gpu_index=gpu_index,
        extra={"copies_per_sample": float(count), "pre_blocked": float(pre_block)},
    )
