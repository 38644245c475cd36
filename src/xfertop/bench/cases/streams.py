"""Cases g, h, j: what non_blocking really does, copy/compute overlap, and copy vs compute in a model step.

CUDA only; torch is imported inside each case so the CPU backend never loads it.
"""

from __future__ import annotations

import math
import time
from typing import Any

from xfertop.bench.cases import CaseContext
from xfertop.bench.cases.copies import _result
from xfertop.bench.method import copies_per_sample, row_from, sampled, summarise
from xfertop.bench.sizes import format_size
from xfertop.model.bench import CaseResult, Measurement, MemoryKind

_HOST_MEMORIES: tuple[MemoryKind, ...] = ("pageable", "pinned")


def _pair(ctx: CaseContext, memory: MemoryKind) -> tuple[Any, Any]:
    host = ctx.ops.alloc(ctx.copy_bytes, memory, ctx.gpu_index)
    device = ctx.ops.alloc(ctx.copy_bytes, "device", ctx.gpu_index)
    ctx.ops.fill_pattern(host, 7)
    ctx.ops.clear(device)
    return host, device


def trap(ctx: CaseContext) -> CaseResult:
    """(g) Host time of one non_blocking H2D call against the transfer's own time, pageable vs pinned."""
    import torch

    start_s = time.perf_counter()
    rows: list[Measurement] = []
    for i, memory in enumerate(_HOST_MEMORIES):
        ctx.progress(i / 2, f"non_blocking from {memory} memory")
        host, device = _pair(ctx, memory)
        transfer_ms: list[float] = []

        def one_sample(
            host: Any = host, device: Any = device, transfer_ms: list[float] = transfer_ms
        ) -> float:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize(ctx.gpu_index)
            start.record()
            call_ns = time.perf_counter_ns()
            device.copy_(host, non_blocking=True)
            call_ns = time.perf_counter_ns() - call_ns
            end.record()
            end.synchronize()
            transfer_ms.append(start.elapsed_time(end))
            return call_ns / 1e6

        summary = sampled(one_sample, ctx.samples)
        transfer = summarise(transfer_ms[1:])
        rows.append(
            row_from(
                summary,
                label=f"{memory}: host call of non_blocking copy",
                direction="h2d",
                memory=memory,
                size_bytes=ctx.copy_bytes,
                unit="ms",
                gpu_index=ctx.gpu_index,
                verified=ctx.ops.verify_pattern(device, 7),
                extra={
                    "transfer_ms": round(transfer.median, 3),
                    "host_share_of_transfer": round(summary.median / transfer.median, 3),
                },
            )
        )
    return _result(
        "trap",
        "the non_blocking trap: host call time vs transfer",
        rows,
        start_s,
        ("from pageable memory non_blocking=True still blocks the host for the whole copy",),
    )


def _matmul_ms(torch: Any, a: Any, n: int, stream: Any) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(stream):
        start.record(stream)
        for _ in range(n):
            a @ a
        end.record(stream)
    end.synchronize()
    return start.elapsed_time(end)


def overlap(ctx: CaseContext) -> CaseResult:
    """(h) Copies on a side stream under matmuls; overlap 1 = copy fully hidden, 0 = one after the other."""
    import torch

    start_s = time.perf_counter()
    dev = ctx.ops.device(ctx.gpu_index)  # type: ignore[attr-defined]
    compute_stream, copy_stream = ctx.ops.stream(ctx.gpu_index, 0), ctx.ops.stream(ctx.gpu_index, 1)  # type: ignore[attr-defined]
    a = torch.randn(4096, 4096, device=dev, dtype=torch.float16)
    count = copies_per_sample(ctx.copy_bytes, ctx.target_bytes)
    rows = []
    for i, memory in enumerate(_HOST_MEMORIES):
        ctx.progress(i / 2, f"{memory} copies under matmuls")
        host, device = _pair(ctx, memory)
        copy_ms = ctx.ops.time_copies_s(device, host, count, non_blocking=True, pre_block=False) * 1e3
        _matmul_ms(torch, a, 2, compute_stream)  # warm-up: cuBLAS handle and workspace
        one_mm_ms = _matmul_ms(torch, a, 4, compute_stream) / 4
        n_mm = max(1, math.ceil(copy_ms / one_mm_ms))
        compute_ms = _matmul_ms(torch, a, n_mm, compute_stream)
        figures: dict[str, list[float]] = {"both_ms": [], "host_call_ms": []}

        def one_sample(
            host: Any = host,
            device: Any = device,
            n_mm: int = n_mm,
            copy_ms: float = copy_ms,
            compute_ms: float = compute_ms,
            figures: dict[str, list[float]] = figures,
        ) -> float:
            start, done_compute, done_copy = (torch.cuda.Event(enable_timing=True) for _ in range(3))
            torch.cuda.synchronize(dev)
            with torch.cuda.stream(compute_stream):
                start.record(compute_stream)
                for _ in range(n_mm):
                    a @ a
                done_compute.record(compute_stream)
            copy_stream.wait_event(start)
            call_ns = time.perf_counter_ns()
            with torch.cuda.stream(copy_stream):
                for _ in range(count):
                    device.copy_(host, non_blocking=True)
                done_copy.record(copy_stream)
            figures["host_call_ms"].append((time.perf_counter_ns() - call_ns) / 1e6)
            torch.cuda.synchronize(dev)
            both_ms = max(start.elapsed_time(done_compute), start.elapsed_time(done_copy))
            figures["both_ms"].append(both_ms)
            return max(0.0, min(1.0, (copy_ms + compute_ms - both_ms) / min(copy_ms, compute_ms)))

        summary = sampled(one_sample, ctx.samples)
        rows.append(
            row_from(
                summary,
                label=f"{memory} copies on a side stream under matmuls",
                direction="h2d",
                memory=memory,
                size_bytes=ctx.copy_bytes,
                unit="overlap",
                gpu_index=ctx.gpu_index,
                verified=ctx.ops.verify_pattern(device, 7),
                extra={
                    "copy_ms": round(copy_ms, 3),
                    "compute_ms": round(compute_ms, 3),
                    "both_ms": round(summarise(figures["both_ms"][1:]).median, 3),
                    "host_call_ms": round(summarise(figures["host_call_ms"][1:]).median, 3),
                },
            )
        )
    return _result(
        "overlap",
        "copy/compute overlap on a side stream",
        rows,
        start_s,
        (
            f"{count} copies of {format_size(ctx.copy_bytes)} vs fp16 4096x4096 matmuls of the same length;"
            " overlap = (copy + compute - both) / min(copy, compute)",
        ),
    )


def model_step(ctx: CaseContext) -> CaseResult:
    """(j) CUDA events split one training step of a small MLP into copy and compute."""
    import torch

    start_s = time.perf_counter()
    dev = ctx.ops.device(ctx.gpu_index)  # type: ignore[attr-defined]
    model = torch.nn.Sequential(*[torch.nn.Linear(2048, 2048) for _ in range(4)]).to(dev)
    optimiser = torch.optim.SGD(model.parameters(), lr=1e-3)
    rows = []
    for i, memory in enumerate(_HOST_MEMORIES):
        ctx.progress(i / 2, f"model step, batch from {memory} memory")
        batch = torch.randn(1024, 2048)
        if memory == "pinned":
            batch = batch.pin_memory()
        compute_ms: list[float] = []

        def one_sample(batch: Any = batch, compute_ms: list[float] = compute_ms) -> float:
            ready, copied, done = (torch.cuda.Event(enable_timing=True) for _ in range(3))
            ready.record()
            x = batch.to(dev, non_blocking=True)
            copied.record()
            loss = model(x).square().mean()
            loss.backward()
            optimiser.step()
            optimiser.zero_grad(set_to_none=True)
            done.record()
            done.synchronize()
            compute_ms.append(copied.elapsed_time(done))
            return ready.elapsed_time(copied)

        summary = sampled(one_sample, max(ctx.samples, 10))
        compute = summarise(compute_ms[1:])
        rows.append(
            row_from(
                summary,
                label=f"copy of a {memory} batch",
                direction="h2d",
                memory=memory,
                size_bytes=batch.numel() * batch.element_size(),
                unit="ms",
                gpu_index=ctx.gpu_index,
                extra={
                    "compute_ms": round(compute.median, 3),
                    "copy_share": round(summary.median / (summary.median + compute.median), 3),
                },
            )
        )
    return _result(
        "model_step",
        "copy vs compute in a small model step",
        rows,
        start_s,
        ("4 x Linear(2048, 2048), batch 1024 x 2048 float32 (8 MiB), SGD; copy = ready->copied event",),
    )
