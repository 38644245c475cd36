"""Cases k and l: every GPU at once (a shared root complex shows), and NUMA-local vs remote pinned memory."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from xfertop.bench.cases import CaseContext
from xfertop.bench.cases.copies import _result
from xfertop.bench.method import copies_per_sample, gb_per_s, measure_copy, row_from, sampled
from xfertop.model.bench import CaseResult, Direction, Measurement

_DIRECTIONS: tuple[Direction, ...] = ("h2d", "d2h")


def _concurrent_gb_per_s(ctx: CaseContext, pairs: dict[int, tuple[Any, Any]], count: int) -> dict[int, float]:
    """One sample: every GPU copies at once (each stream held by a spin kernel until all are queued)."""
    import torch

    ops: Any = ctx.ops
    events = {}
    for gpu, _pair in pairs.items():
        torch.cuda.synchronize(gpu)
    for gpu, (dst, src) in pairs.items():
        stream = ops.stream(gpu)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with torch.cuda.device(gpu), torch.cuda.stream(stream):
            torch.cuda._sleep(ops.spin_cycles(gpu, 2e-3 * len(pairs)))
            start.record(stream)
            for _ in range(count):
                dst.copy_(src, non_blocking=True)
            end.record(stream)
        events[gpu] = (start, end)
    for _start, end in events.values():
        end.synchronize()
    return {
        gpu: gb_per_s(src.numel(), count, start.elapsed_time(end) / 1e3)
        for (gpu, (start, end)), (_dst, src) in zip(events.items(), pairs.values(), strict=True)
    }


def all_gpus(ctx: CaseContext) -> CaseResult:
    start_s = time.perf_counter()
    gpus = list(range(ctx.ops.device_count()))
    if len(gpus) < 2:
        return CaseResult(
            "all_gpus",
            "every GPU at once",
            (),
            0.0,
            skipped_reason="one GPU visible: nothing to share a root complex with",
        )
    size, count = ctx.copy_bytes, copies_per_sample(ctx.copy_bytes, ctx.target_bytes)
    rows: list[Measurement] = []
    for d, direction in enumerate(_DIRECTIONS):
        pairs = {}
        for gpu in gpus:
            host, device = ctx.ops.alloc(size, "pinned", gpu), ctx.ops.alloc(size, "device", gpu)
            ctx.ops.fill_pattern(host if direction == "h2d" else device, 3)
            pairs[gpu] = (device, host) if direction == "h2d" else (host, device)
        ctx.progress(d / 2, f"{direction.upper()} on {len(gpus)} GPUs alone, then together")
        solo = {
            gpu: gb_per_s(
                size, count, ctx.ops.time_copies_s(dst, src, count, non_blocking=True, pre_block=False)
            )
            for gpu, (dst, src) in pairs.items()
        }
        per_sample: list[dict[int, float]] = []

        def one_sample(
            pairs: dict[int, tuple[Any, Any]] = pairs, per_sample: list[dict[int, float]] = per_sample
        ) -> float:
            figures = _concurrent_gb_per_s(ctx, pairs, count)
            per_sample.append(figures)
            return sum(figures.values())

        total = sampled(one_sample, ctx.samples)
        for gpu in gpus:
            values = sorted(s[gpu] for s in per_sample[1:])
            mid = values[len(values) // 2]
            rows.append(
                Measurement(
                    label=f"GPU {gpu} {direction.upper()} with all GPUs busy",
                    direction=direction,
                    memory="pinned",
                    size_bytes=size,
                    value=round(mid, 3),
                    gpu_index=gpu,
                    value_min=round(values[0], 3),
                    value_max=round(values[-1], 3),
                    verified=ctx.ops.verify_pattern(pairs[gpu][0], 3),
                    extra={"alone_gb_per_s": round(solo[gpu], 3)},
                )
            )
        rows.append(
            row_from(
                total,
                label=f"all {len(gpus)} GPUs {direction.upper()} total",
                direction=direction,
                memory="pinned",
                size_bytes=size,
            )
        )
    return _result(
        "all_gpus",
        "every GPU at once",
        rows,
        start_s,
        ("GPUs behind one switch or root port share its uplink: per-GPU figures drop together",),
    )


def numa_nodes() -> dict[int, list[int]]:
    """NUMA node -> its CPUs, from sysfs (empty when the kernel exposes no nodes)."""
    nodes = {}
    for path in sorted(Path("/sys/devices/system/node").glob("node[0-9]*")):
        cpulist = (path / "cpulist").read_text().strip()
        nodes[int(path.name[4:])] = parse_cpulist(cpulist)
    return nodes


def parse_cpulist(text: str) -> list[int]:
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11]."""
    cpus: list[int] = []
    for part in filter(None, text.strip().split(",")):
        low, _, high = part.partition("-")
        cpus.extend(range(int(low), int(high or low) + 1))
    return cpus


def numa(ctx: CaseContext) -> CaseResult:
    """(l) Pinned buffers first-touched on the GPU's node vs a remote node (affinity set while touching)."""
    start_s = time.perf_counter()
    nodes = {n: cpus for n, cpus in numa_nodes().items() if cpus}
    if len(nodes) < 2:
        return CaseResult(
            "numa",
            "pinned memory on the GPU's NUMA node vs a remote one",
            (),
            0.0,
            skipped_reason=f"{len(nodes)} NUMA node with CPUs: nothing remote to compare",
        )
    local = ctx.gpu_numa_node
    local = local if local in nodes else min(nodes)
    remote = next(n for n in nodes if n != local)
    original = os.sched_getaffinity(0)
    ops: Any = ctx.ops
    rows = []
    try:
        for i, (where, node) in enumerate((("local", local), ("remote", remote))):
            os.sched_setaffinity(0, nodes[node])
            for j, direction in enumerate(_DIRECTIONS):
                ctx.progress((2 * i + j) / 4, f"{where} node {node} {direction.upper()}")
                host = ops.alloc_registered(ctx.copy_bytes)
                try:
                    rows.append(
                        measure_copy(
                            ops,
                            direction=direction,
                            memory="pinned",
                            size_bytes=ctx.copy_bytes,
                            samples=ctx.samples,
                            gpu_index=ctx.gpu_index,
                            target_bytes=ctx.target_bytes,
                            label=f"{where} node {node} {direction.upper()}",
                            host=host,
                        )
                    )
                finally:
                    ops.unregister(host)
    finally:
        os.sched_setaffinity(0, original)
    return _result(
        "numa",
        "pinned memory on the GPU's NUMA node vs a remote one",
        rows,
        start_s,
        (
            "pages are first touched by a thread bound to the node's CPUs; the CUDA backend pins "
            "by registering those pages (cudaHostRegister), so the caching allocator cannot reuse "
            "a block from the other node",
        ),
    )
