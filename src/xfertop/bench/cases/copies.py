"""Cases a-f: plain copies, generic over the backend's operations."""

from __future__ import annotations

import time

from xfertop.bench.cases import CaseContext
from xfertop.bench.method import GIB, MIB, copies_per_sample, gb_per_s, measure_copy, row_from, sampled
from xfertop.bench.sizes import format_size
from xfertop.model.bench import CaseResult, Direction, Measurement, MemoryKind


def _result(
    name: str, title: str, rows: list[Measurement], start_s: float, notes: tuple[str, ...] = ()
) -> CaseResult:
    return CaseResult(name, title, tuple(rows), round(time.perf_counter() - start_s, 3), notes)


def sync_baseline_bytes(free_device_bytes: int, cap_bytes: int = GIB) -> int:
    """The classic (256, 1024, 1024) float32 = 1 GiB tensor, shrunk to a quarter of free memory."""
    return max(MIB, min(cap_bytes, free_device_bytes // 4) // MIB * MIB)


def sync_baseline(ctx: CaseContext) -> CaseResult:
    start_s = time.perf_counter()
    cap_bytes = GIB if ctx.ops.name == "cuda" else ctx.copy_bytes
    size = sync_baseline_bytes(ctx.ops.free_device_bytes(ctx.gpu_index), cap_bytes)
    ctx.progress(0.1, f"pageable {size // MIB} MiB, host clock around blocking copies")
    row = measure_copy(
        ctx.ops,
        direction="h2d",
        memory="pageable",
        size_bytes=size,
        samples=ctx.samples,
        non_blocking=False,
        wall_clock=True,
        gpu_index=ctx.gpu_index,
        target_bytes=ctx.target_bytes,
        label="pageable x.to(device)",
    )
    return _result(
        "sync_baseline",
        "pageable x.to(device), the classic recipe",
        [row],
        start_s,
        ("timed like the common recipe: host clock, synchronize before and after",),
    )


def pinned(ctx: CaseContext) -> CaseResult:
    start_s = time.perf_counter()
    ctx.progress(0.1, f"pinned H2D {ctx.copy_bytes // MIB} MiB, blocking")
    row = measure_copy(
        ctx.ops,
        direction="h2d",
        memory="pinned",
        size_bytes=ctx.copy_bytes,
        samples=ctx.samples,
        non_blocking=False,
        gpu_index=ctx.gpu_index,
        target_bytes=ctx.target_bytes,
        label="pinned H2D blocking",
    )
    return _result("pinned", "pinned H2D, blocking copy", [row], start_s)


def pinned_nb(ctx: CaseContext) -> CaseResult:
    start_s = time.perf_counter()
    ctx.progress(0.1, f"pinned H2D {ctx.copy_bytes // MIB} MiB, non_blocking")
    row = measure_copy(
        ctx.ops,
        direction="h2d",
        memory="pinned",
        size_bytes=ctx.copy_bytes,
        samples=ctx.samples,
        gpu_index=ctx.gpu_index,
        target_bytes=ctx.target_bytes,
        label="pinned H2D non_blocking",
    )
    return _result("pinned_nb", "pinned H2D, non_blocking", [row], start_s)


def d2h(ctx: CaseContext) -> CaseResult:
    start_s = time.perf_counter()
    rows = []
    memories: tuple[MemoryKind, ...] = ("pageable", "pinned")
    for i, memory in enumerate(memories):
        ctx.progress(i / 2, f"{memory} D2H {ctx.copy_bytes // MIB} MiB")
        rows.append(
            measure_copy(
                ctx.ops,
                direction="d2h",
                memory=memory,
                size_bytes=ctx.copy_bytes,
                samples=ctx.samples,
                gpu_index=ctx.gpu_index,
                target_bytes=ctx.target_bytes,
            )
        )
    return _result("d2h", "D2H, pageable and pinned", rows, start_s)


def bidir(ctx: CaseContext) -> CaseResult:
    start_s = time.perf_counter()
    ops, size = ctx.ops, ctx.copy_bytes
    ctx.progress(0.1, f"pinned H2D and D2H {size // MIB} MiB at once")
    up_src, up_dst = ops.alloc(size, "pinned", ctx.gpu_index), ops.alloc(size, "device", ctx.gpu_index)
    down_src, down_dst = ops.alloc(size, "device", ctx.gpu_index), ops.alloc(size, "pinned", ctx.gpu_index)
    ops.fill_pattern(up_src, 11)
    ops.fill_pattern(down_src, 13)
    ops.clear(up_dst)
    ops.clear(down_dst)
    count = copies_per_sample(size, ctx.target_bytes)
    per_direction: list[tuple[float, float]] = []

    def one_sample() -> float:
        total_s, up_s, down_s = ops.time_bidir_s((up_dst, up_src), (down_dst, down_src), count)
        per_direction.append((gb_per_s(size, count, up_s), gb_per_s(size, count, down_s)))
        return gb_per_s(2 * size, count, total_s)

    summary = sampled(one_sample, ctx.samples)
    timed = sorted(per_direction[1:])
    up_mid, down_mid = timed[len(timed) // 2]
    verified = ops.verify_pattern(up_dst, 11) and ops.verify_pattern(down_dst, 13)
    row = row_from(
        summary,
        label="pinned H2D+D2H total",
        direction="bidir",
        memory="pinned",
        size_bytes=size,
        verified=verified,
        gpu_index=ctx.gpu_index,
        extra={"h2d_gb_per_s": round(up_mid, 3), "d2h_gb_per_s": round(down_mid, 3)},
    )
    return _result(
        "bidir",
        "bidirectional, pinned",
        [row],
        start_s,
        ("figure is the sum of both directions over the longer of the two",),
    )


def sweep(ctx: CaseContext) -> CaseResult:
    start_s = time.perf_counter()
    memories: tuple[MemoryKind, ...] = ("pinned", "pageable")
    directions: tuple[Direction, ...] = ("h2d", "d2h")
    plan = [
        (size, memory, direction)
        for size in ctx.sweep_bytes
        for memory in memories
        for direction in directions
    ]
    rows = []
    for i, (size, memory, direction) in enumerate(plan):
        ctx.progress(i / len(plan), f"{memory} {direction.upper()} {format_size(size)}")
        rows.append(
            measure_copy(
                ctx.ops,
                direction=direction,
                memory=memory,
                size_bytes=size,
                samples=ctx.samples,
                gpu_index=ctx.gpu_index,
                target_bytes=ctx.target_bytes,
                label=f"{memory} {direction.upper()} {format_size(size)}",
            )
        )
    return _result("sweep", "size sweep, pinned and pageable", rows, start_s)
