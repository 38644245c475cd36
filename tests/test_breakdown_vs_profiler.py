"""benchmarks/breakdown_vs_profiler.py: trace parsing, step alignment and the verdict, on synthetic events."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from xfertop.model.jobs import StepRecord

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "breakdown_vs_profiler.py"
BATCH = 32 * 2**20


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("breakdown_vs_profiler", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


bench = _load()


def _op(name: str, cat: str, ts: float, dur: float, **args: Any) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur, "args": args}


def _copy(ts: float, dur: float = 1000.0, size: int = BATCH) -> dict[str, Any]:
    return _op("Memcpy HtoD (Pinned -> Device)", "gpu_memcpy", ts, dur, bytes=size)


def _kernel(ts: float, dur: float) -> dict[str, Any]:
    return _op("sm90_xmma_gemm_bf16bf16", "kernel", ts, dur)


def synthetic_trace() -> dict[str, Any]:
    """Three steps, 20 ms apart: 1 ms copy, kernels (with a gap inside the step), a readback on step 1."""
    events: list[dict[str, Any]] = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 5.0, "dur": 50000.0},  # host: ignored
        {"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep", "ts": 0.0, "dur": 60000.0},
        {"ph": "f", "cat": "ac2g", "name": "flow", "ts": 10.0},
        _kernel(-5000.0, 100.0),  # before the first step copy: belongs to no step
        _op("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", -3000.0, 2.0, bytes=4),  # small: not a step
    ]
    for number in range(3):
        begin = number * 20000.0
        events += [_copy(begin), _kernel(begin + 1000.0, 3000.0), _kernel(begin + 4500.0, 2500.0)]
        if number == 1:
            events.append(_op("Memcpy DtoH (Device -> Pageable)", "gpu_memcpy", begin + 7100.0, 5.0, bytes=4))
        events.append(_op("Memset (Device)", "gpu_memset", begin + 6900.0, 10.0))
    return {"traceEvents": events[::-1]}  # out of order, as merged traces may be


def test_device_ops_are_read_and_sorted() -> None:
    ops = bench.gpu_ops_from_chrome_trace(synthetic_trace())
    assert [op.start_us for op in ops] == sorted(op.start_us for op in ops)
    assert {op.category for op in ops} == {"kernel", "gpu_memcpy", "gpu_memset"}
    assert len(ops) == 2 + 3 * 4 + 1
    assert ops[2].bytes == BATCH and ops[2].end_us == 1000.0
    old_spelling = bench.gpu_ops_from_chrome_trace(
        [_op("k", "Kernel", 1.0, 2.0), _op("m", "Memcpy", 4.0, 1.0)]
    )
    assert [op.category for op in old_spelling] == ["kernel", "memcpy"]


def test_trace_steps_copy_compute_and_idle() -> None:
    steps = bench.trace_steps(bench.gpu_ops_from_chrome_trace(synthetic_trace()), min_copy_bytes=BATCH // 2)
    assert len(steps) == 3
    first, second, third = steps
    assert first.copy_ms == pytest.approx(1.0)
    assert first.compute_ms == pytest.approx(6.0)  # copy end (1 ms) -> last kernel end (7 ms)
    assert first.idle_ms is None
    assert second.compute_ms == pytest.approx(6.105)  # the readback ends at 7.105 ms: the last GPU op
    assert second.idle_ms == pytest.approx(13.0)  # 7 ms -> 20 ms
    assert third.idle_ms == pytest.approx(20.0 - 7.105)
    assert first.ops == 4 and second.ops == 5


def test_small_copies_do_not_start_a_step_unless_bytes_are_unknown() -> None:
    ops = bench.gpu_ops_from_chrome_trace(
        [_copy(0.0), _kernel(1000.0, 500.0), _copy(1600.0, 1.0, size=8), _kernel(1700.0, 300.0)]
    )
    assert len(bench.trace_steps(ops, min_copy_bytes=1024)) == 1
    assert len(bench.trace_steps(ops)) == 2
    no_size = bench.GpuOp("Memcpy HtoD (Pinned -> Device)", "gpu_memcpy", 0.0, 1.0, None)
    assert bench.is_step_copy(no_size, 1024)


def _record(step: int, gap: float | None) -> StepRecord:
    """A reporter step whose GPU idle gap before its first work was measured (None: not measured)."""
    return StepRecord(step, 20.0, 13.0, 0.05, 0.0, 0.0, 0.0, gap, BATCH, 1, True, False, 0)


def test_pairs_align_by_step_order_and_skip_warm_up_and_unmeasured_steps() -> None:
    traced = [bench.TraceStep(1.0, 6.0, None if i == 0 else 13.0 + i, 4) for i in range(8)]
    records = [_record(100 + i, 13.02 + i) for i in range(8)]
    records[6] = _record(106, None)  # its gap was not measured (sampled out, or dropped)
    pairs = bench.pair_steps(records[::-1], traced, skip=2)
    assert [p["step"] for p in pairs] == [102, 103, 104, 105, 107]
    # The reporter's measured gap against the trace's idle time before the step's copy.
    assert pairs[0]["trace"]["idle"] == 15.0
    assert pairs[0]["reporter"]["idle"] == pytest.approx(15.02)
    # More reporter steps than traced ones (the trace lost a copy): the extra ones are not paired.
    assert len(bench.pair_steps([*records, _record(108, 13.0)], traced, skip=2)) == 5


def _pairs(reporter_idle: float, trace: dict[str, float], count: int = 30) -> list[dict[str, Any]]:
    return [{"step": i, "reporter": {"idle": reporter_idle}, "trace": dict(trace)} for i in range(count)]


def test_verdict_on_the_idle_gap_within_five_percent() -> None:
    trace = {"copy": 0.7, "compute": 8.0, "idle": 7.0}
    good = bench.compare(_pairs(6.8, trace))
    assert good["pass"] and good["idle"]["ratio"] == pytest.approx(6.8 / 7.0)
    assert good["trace_compute_median_ms"] == 8.0  # context, not judged
    assert "PASS" in bench.table(good)
    idle_off = bench.compare(_pairs(6.6, trace))
    assert not idle_off["idle"]["ok"] and not idle_off["pass"]
    assert "FAIL" in bench.table(idle_off)
    too_few = bench.compare(_pairs(7.0, trace, count=5))
    assert not too_few["pass"] and too_few["idle"]["ok"]
    empty = bench.compare([])
    assert not empty["pass"] and "no steps" in bench.table(empty)


def test_without_cuda_it_says_so_in_one_line_and_exits_2(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is visible: the benchmark would run")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "out")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("no CUDA GPU visible to torch: ")
    assert not (tmp_path / "out").exists()
