"""GPU idle accuracy: the reporter's measured idle gap against a torch.profiler trace of the same steps.

One loop of watched steps runs under ``torch.profiler.profile(activities=[CPU, CUDA])`` with the reporter
active at the same time: a loader that sleeps a known time then yields a pinned batch;
``xfertop.to_device(batch, "cuda", non_blocking=True)``; bf16 and fp32 matmuls (their count calibrated to
``--work-ms`` of GPU time); a ``.item()`` every ``--sync-every`` steps. Every step is >= 5 ms, so every
step's gap is measured (docs/reporter.md, "Sampling"). Then the reporter's steps are read back from its
ring (RingReader) and the trace's device-side ops from its Chrome trace export, and the two are compared.

Definitions (per step; step k of the loop is the k-th large host-to-device memcpy of the trace):

- reporter ``gpu_gap_ms``: the GPU's own idle time before the step's first work. The step before records
  an ``after`` event once its work is queued (at its end under ``watch(instrument=False)``, used
  here); this step asks it at its first work (here: the batch's arrival). Still running: 0. Drained:
  an event recorded then completes at once, and after -> first is the gap (research/diagnosis.md,
  "Measuring the GPU's own busy time").
- trace idle: the end of the previous step's last GPU op -> the start of this step's HtoD memcpy. The
  trace's copy and compute (the memcpy; its end -> the step's last op) are printed for context only: the
  reporter no longer times them on the GPU (event intervals are not GPU busy time).

The gap ends where the host reaches the step's first work, a few tens of microseconds before the memcpy
starts on the GPU, so the reporter reads slightly short. The data wait (``--wait-ms``) is longer than the
GPU work (``--work-ms``), so the GPU drains between batches and every step has a sizeable gap to compare.

Pass: the medians (after ``--skip`` warm-up steps) of the idle gap agree within 5%, over at least 20
steps. Writes breakdown_vs_profiler.json and the profiler's trace.json to OUT_DIR; prints a table. Exit
status: 0 pass, 1 fail, 2 no CUDA GPU.

    PYTHONPATH=$PWD/src python3 benchmarks/breakdown_vs_profiler.py OUT_DIR    # a few seconds
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

IDLE_REL_TOL = 0.05
MIN_PAIRS = 20
#: Chrome-trace categories of device-side ops (kineto spells them in lower case now, capitalised in old
#: releases). gpu_user_annotation spans are host ranges projected onto the GPU row: not ops.
DEVICE_CATEGORIES = {"kernel", "gpu_memcpy", "memcpy", "gpu_memset", "memset"}


# -- pure functions: trace parsing, step alignment, comparison (tests/test_breakdown_vs_profiler.py) -----
@dataclass(frozen=True)
class GpuOp:
    name: str
    category: str
    start_us: float
    end_us: float
    bytes: int | None = None


@dataclass(frozen=True)
class TraceStep:
    copy_ms: float
    compute_ms: float
    #: None for the first step of the trace: there is no previous step to be idle after.
    idle_ms: float | None
    ops: int


def gpu_ops_from_chrome_trace(trace: dict[str, Any] | list[Any]) -> list[GpuOp]:
    """Device-side ops (kernels, memcpys, memsets) of a torch.profiler Chrome trace, sorted by start."""
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    ops = []
    for event in events:
        if not isinstance(event, dict) or event.get("ph") != "X":
            continue
        if str(event.get("cat", "")).lower() not in DEVICE_CATEGORIES:
            continue
        start = float(event["ts"])
        args = event.get("args") or {}
        size = args.get("bytes", args.get("Bytes"))
        ops.append(
            GpuOp(
                str(event.get("name", "")),
                str(event["cat"]).lower(),
                start,
                start + float(event.get("dur", 0.0)),
                int(size) if size is not None else None,
            )
        )
    ops.sort(key=lambda op: (op.start_us, op.end_us))
    return ops


def is_step_copy(op: GpuOp, min_bytes: int) -> bool:
    """A host-to-device memcpy ('Memcpy HtoD (Pinned -> Device)') of at least min_bytes (when known)."""
    if "memcpy" not in op.category or "htod" not in op.name.lower():
        return False
    return op.bytes is None or op.bytes >= min_bytes


def trace_steps(ops: Sequence[GpuOp], min_copy_bytes: int = 0) -> list[TraceStep]:
    """One TraceStep per step copy: the step owns every op from its copy's start to the next step's copy.

    Ops before the first step copy (set-up, the previous loop) belong to no step.
    """
    ordered = sorted(ops, key=lambda op: (op.start_us, op.end_us))
    starts = [i for i, op in enumerate(ordered) if is_step_copy(op, min_copy_bytes)]
    steps = []
    previous_end: float | None = None
    for number, first in enumerate(starts):
        last = starts[number + 1] if number + 1 < len(starts) else len(ordered)
        owned = ordered[first:last]
        copy = owned[0]
        end = max(op.end_us for op in owned)
        idle = None if previous_end is None else (copy.start_us - previous_end) / 1000
        steps.append(
            TraceStep((copy.end_us - copy.start_us) / 1000, (end - copy.end_us) / 1000, idle, len(owned))
        )
        previous_end = end
    return steps


def pair_steps(
    reporter_steps: Sequence[Any], traced: Sequence[TraceStep], skip: int, first_step: int | None = None
) -> list[dict[str, Any]]:
    """Reporter step ``first_step + k`` against trace step k, for k >= skip; steps with a measured gap.

    ``reporter_steps`` have ``step`` and ``gpu_gap_ms`` (StepRecord); ``first_step`` defaults to the
    lowest step number present (the loop's first next()).
    """
    if not reporter_steps:
        return []
    base = min(s.step for s in reporter_steps) if first_step is None else first_step
    pairs = []
    for record in sorted(reporter_steps, key=lambda s: s.step):
        index = record.step - base
        if index < skip or index >= len(traced) or record.gpu_gap_ms is None:
            continue
        trace = traced[index]
        if trace.idle_ms is None:
            continue
        pairs.append(
            {
                "step": record.step,
                "reporter": {"idle": record.gpu_gap_ms},
                "trace": {"copy": trace.copy_ms, "compute": trace.compute_ms, "idle": trace.idle_ms},
            }
        )
    return pairs


def compare(
    pairs: Sequence[dict[str, Any]], rel_tol: float = IDLE_REL_TOL, min_pairs: int = MIN_PAIRS
) -> dict[str, Any]:
    """Medians of the reporter's and the trace's idle, their ratio and difference, and the verdict; the
    trace's copy and compute medians for context."""
    result: dict[str, Any] = {"pairs": len(pairs), "enough_pairs": len(pairs) >= min_pairs}
    for metric in ("copy", "compute"):
        result[f"trace_{metric}_median_ms"] = (
            statistics.median(p["trace"][metric] for p in pairs) if pairs else None
        )
    if not pairs:
        result["idle"] = {"ok": False}
        result["pass"] = False
        return result
    ours = [p["reporter"]["idle"] for p in pairs]
    theirs = [p["trace"]["idle"] for p in pairs]
    reporter_median, trace_median = statistics.median(ours), statistics.median(theirs)
    diffs = [a - b for a, b in zip(ours, theirs, strict=True)]
    diff = reporter_median - trace_median
    ok = trace_median > 0 and abs(diff) <= rel_tol * trace_median
    result["idle"] = {
        "reporter_median_ms": reporter_median,
        "trace_median_ms": trace_median,
        "ratio": reporter_median / trace_median if trace_median > 0 else None,
        "diff_ms": diff,
        "tolerance": f"+-{rel_tol:.0%}",
        "ok": ok,
        "per_step_diff_median_ms": statistics.median(diffs),
        "per_step_abs_diff_max_ms": max(abs(d) for d in diffs),
    }
    result["pass"] = bool(result["enough_pairs"] and ok)
    return result


def table(summary: dict[str, Any]) -> str:
    lines = [
        f"{'metric':8} {'reporter ms':>12} {'trace ms':>10} {'ratio':>7} {'diff ms':>9} "
        f"{'tolerance':>10}  verdict"
    ]
    row = summary["idle"]
    if "reporter_median_ms" not in row:
        lines.append(f"{'idle':8} {'-':>12} {'-':>10} {'-':>7} {'-':>9} {'-':>10}  no steps")
    else:
        ratio = f"{row['ratio']:.3f}" if row["ratio"] is not None else "-"
        lines.append(
            f"{'idle':8} {row['reporter_median_ms']:12.3f} {row['trace_median_ms']:10.3f} "
            f"{ratio:>7} {row['diff_ms']:+9.3f} {row['tolerance']:>10}  {'ok' if row['ok'] else 'OFF'}"
        )
        lines.append(
            f"(the trace's copy {summary['trace_copy_median_ms']:.3f} ms and compute "
            f"{summary['trace_compute_median_ms']:.3f} ms a step, for context)"
        )
    lines.append(
        f"{summary['pairs']} steps compared (medians): "
        + ("PASS" if summary["pass"] else "FAIL")
        + ": the GPU's idle gap within 5% of the trace"
    )
    return "\n".join(lines)


# -- the measured loop (CUDA only) ------------------------------------------------------------------------
def calibrate_work(torch: Any, work_ms: float) -> tuple[Any, int, float]:
    """A unit of GPU work (a bf16 4096^3 and an fp32 2048^3 matmul) and how many units make work_ms."""
    torch.backends.cuda.matmul.allow_tf32 = False
    a16 = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b16 = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    a32 = torch.randn(2048, 2048, device="cuda")
    b32 = torch.randn(2048, 2048, device="cuda")

    def unit() -> Any:
        torch.mm(a16, b16)
        return torch.mm(a32, b32)

    for _ in range(5):
        unit()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(20):
        unit()
    end.record()
    torch.cuda.synchronize()
    unit_ms = start.elapsed_time(end) / 20
    return unit, max(1, round(work_ms / unit_ms)), unit_ms


def run(torch: Any, args: argparse.Namespace, trace_path: Path) -> dict[str, Any]:
    import xfertop
    import xfertop.reporter as reporter
    from xfertop.sources.jobs.ring_reader import RingReader

    unit, reps, unit_ms = calibrate_work(torch, args.work_ms)
    batch = torch.ones(args.batch_mib * 2**20 // 4).pin_memory()
    for _ in range(3):  # warm the copy path and the caching allocator
        batch.to("cuda", non_blocking=True).add_(1.0)
    torch.cuda.synchronize()
    wait_s = args.wait_ms / 1000

    def loader() -> Iterator[Any]:
        for _ in range(args.steps):
            time.sleep(wait_s)
            yield batch

    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    began = time.perf_counter()
    with torch.profiler.profile(activities=activities) as prof:
        for index, host in enumerate(xfertop.watch(loader(), instrument=False)):
            moved = xfertop.to_device(host, "cuda", non_blocking=True)
            moved.add_(1.0)
            out: Any = None
            for _ in range(reps):
                out = unit()
            if (index + 1) % args.sync_every == 0:
                out.sum().item()  # the host waits for the GPU here, as a logged loss does
        torch.cuda.synchronize()
    loop_s = time.perf_counter() - began
    clock = reporter._clock
    if clock is None or clock.writer is None:
        raise RuntimeError(f"the reporter wrote no ring: {reporter.status()}")
    clock.resolve_pending()
    prof.export_chrome_trace(str(trace_path))
    ring = RingReader(clock.writer.path)
    ring.poll()
    records = list(ring.steps)
    ring.close()
    ops = gpu_ops_from_chrome_trace(json.loads(trace_path.read_text()))
    traced = trace_steps(ops, min_copy_bytes=batch.numel() * batch.element_size() // 2)
    pairs = pair_steps(records, traced, args.skip)
    summary = compare(pairs)
    if len(traced) != args.steps:  # steps would be misaligned: the verdict cannot stand
        summary["pass"] = False
        summary["problem"] = f"the trace holds {len(traced)} step copies for {args.steps} steps"
    return {
        "loop": {
            "steps": args.steps,
            "skip": args.skip,
            "wait_ms": args.wait_ms,
            "work_ms": args.work_ms,
            "matmul_units_per_step": reps,
            "unit_ms": unit_ms,
            "batch_mib": args.batch_mib,
            "sync_every": args.sync_every,
            "loop_s": loop_s,
        },
        "reporter": {
            "steps_in_ring": len(records),
            "gpu_timed_steps": sum(r.gpu_gap_ms is not None for r in records),
            "status": reporter.status(),
        },
        "trace": {"gpu_ops": len(ops), "steps_found": len(traced), "trace_file": trace_path.name},
        "summary": summary,
        "steps": pairs,
        "trace_steps": [asdict(step) for step in traced],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--skip", type=int, default=5, help="warm-up steps left out of the comparison")
    parser.add_argument("--wait-ms", type=float, default=16.0, help="the loader's sleep per batch")
    parser.add_argument("--work-ms", type=float, default=8.0, help="GPU matmul time per step")
    parser.add_argument("--batch-mib", type=int, default=32)
    parser.add_argument("--sync-every", type=int, default=4, help="a .item() every this many steps")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("torch is not installed: this benchmark needs a CUDA build of torch and an NVIDIA GPU")
        return 2
    if not torch.cuda.is_available():
        print(
            f"no CUDA GPU visible to torch: torch {torch.__version__} (CUDA {torch.version.cuda}); "
            "run this on a machine with an NVIDIA GPU"
        )
        return 2
    os.environ["XFERTOP_DIR"] = tempfile.mkdtemp(prefix="xfertop-breakdown-rings-")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "benchmark": "breakdown_vs_profiler",
        "machine": {
            "host": platform.node(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "gpu": torch.cuda.get_device_name(0),
        },
        "tolerances": {"idle_rel": IDLE_REL_TOL, "min_pairs": MIN_PAIRS},
    }
    result.update(run(torch, args, args.out_dir / "trace.json"))
    (args.out_dir / "breakdown_vs_profiler.json").write_text(json.dumps(result, indent=2))
    loop, reporter_info, trace_info = result["loop"], result["reporter"], result["trace"]
    print(
        f"{loop['steps']} steps: wait {loop['wait_ms']} ms, {loop['matmul_units_per_step']} matmul units "
        f"of {loop['unit_ms']:.3f} ms, {loop['batch_mib']} MiB pinned, .item() every {loop['sync_every']}; "
        f"reporter: {reporter_info['gpu_timed_steps']}/{reporter_info['steps_in_ring']} gaps measured; "
        f"trace: {trace_info['steps_found']} step copies, {trace_info['gpu_ops']} GPU ops"
    )
    print(table(result["summary"]))
    if "problem" in result["summary"]:
        print(f"FAIL: {result['summary']['problem']}")
    return 0 if result["summary"]["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
