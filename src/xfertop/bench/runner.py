"""Runs the chosen cases in this (child) process and emits protocol messages; returns the exit code."""

from __future__ import annotations

import dataclasses
import os
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Protocol

from xfertop.analysis.acceptance import Thresholds, exit_code_for, judge_run, overall_status
from xfertop.bench import machine
from xfertop.bench.cases import CaseContext, case_spec
from xfertop.bench.machine import LinkReading
from xfertop.bench.method import GIB, MIB, SAMPLE_TARGET_BYTES
from xfertop.bench.protocol import RUN_SCHEMA, CaseDone, Failure, Hello, Message, Progress, RunDone
from xfertop.bench.sizes import KIB, sweep_plan
from xfertop.model.bench import BenchRun, CaseResult, LinkFacts, MachineFacts

Emit = Callable[[Message], None]
EXIT_COULD_NOT_RUN = 2
#: Copies of 256 MiB queued while nvidia-smi reads the link: about 1.2 s of traffic at Gen5 x16.
LINK_PROBE_COPIES = 256


@dataclass
class RunOptions:
    backend: str = "cuda"
    check: bool = False
    cases: list[str] = field(default_factory=list)
    gpu_index: int = 0
    samples: int | None = None
    copy_bytes: int | None = None
    sweep_bytes: tuple[int, ...] | None = None
    thresholds: Thresholds = field(default_factory=Thresholds)
    #: CPU backend only: flip one byte after every copy, so verification and exit code 1 can be tested.
    cpu_corrupt: bool = False


class LinkReader(Protocol):
    source: str

    def read(self, counters: bool = True) -> list[LinkReading]: ...
    def busy_pids(self, index: int) -> tuple[int, ...]: ...
    def close(self) -> None: ...


class CouldNotRun(Exception):
    """The run cannot start or go on here; the message is the one-line reason."""


def _cuda_ops(options: RunOptions) -> tuple[Any, str | None, str | None]:
    try:
        import torch
    except ImportError as exc:
        raise CouldNotRun(
            f"torch is not installed ({exc}): install a CUDA build of torch to benchmark"
        ) from exc
    from xfertop.bench.ops_cuda import CudaOps, describe_no_cuda

    reason = describe_no_cuda()
    if reason:
        raise CouldNotRun(reason)
    if not 0 <= options.gpu_index < torch.cuda.device_count():
        raise CouldNotRun(f"no GPU {options.gpu_index}: torch sees {torch.cuda.device_count()} GPU(s)")
    torch.cuda.set_device(options.gpu_index)
    return CudaOps(), torch.__version__, torch.version.cuda


def _cpu_ops(options: RunOptions) -> Any:
    from xfertop.bench.ops_cpu import CorruptingCpuOps, CpuOps

    return CorruptingCpuOps() if options.cpu_corrupt else CpuOps()


def _context(ops: Any, options: RunOptions, emit: Emit, case: str, facts: MachineFacts) -> CaseContext:
    is_cuda = ops.name == "cuda"
    samples = options.samples or (3 if options.check else 5)
    copy_bytes = options.copy_bytes or (256 * MIB if is_cuda else 4 * MIB)
    fit = ops.free_device_bytes(options.gpu_index) // 4
    sweep = options.sweep_bytes or (sweep_plan(fit_bytes=fit) if is_cuda else sweep_plan(64 * KIB, 4 * MIB))
    target = SAMPLE_TARGET_BYTES if is_cuda else 64 * MIB
    return CaseContext(
        ops=ops,
        gpu_index=options.gpu_index,
        samples=samples,
        copy_bytes=copy_bytes,
        sweep_bytes=sweep,
        target_bytes=min(target, max(copy_bytes, GIB) * 2),
        gpu_numa_node=facts.gpu_numa_node,
        progress=lambda fraction, text: emit(Progress(case, round(fraction, 3), text)),
    )


def _run_case(ops: Any, name: str, options: RunOptions, emit: Emit, facts: MachineFacts) -> CaseResult:
    spec = case_spec(name)
    if spec.cuda_only and ops.name != "cuda":
        return CaseResult(name, spec.title, (), 0.0, skipped_reason="needs the CUDA backend")
    emit(Progress(name, 0.0, spec.title))
    try:
        result = spec.run(_context(ops, options, emit, name, facts))
    except MemoryError as exc:
        raise CouldNotRun(
            f"out of memory in case {name}: {exc or 'host allocation failed'}; try a smaller --size"
        ) from exc
    except RuntimeError as exc:
        if "out of memory" in str(exc).lower():
            raise CouldNotRun(
                f"out of memory in case {name}: {str(exc).splitlines()[0]}; "
                "try a smaller --size or free the GPU"
            ) from exc
        traceback.print_exc(file=sys.stderr)
        raise CouldNotRun(f"case {name} failed: {type(exc).__name__}: {str(exc).splitlines()[0]}") from exc
    emit(Progress(name, 1.0, "done"))
    return result


def _link_under_load(ops: Any, gpu_index: int, reader: LinkReader) -> list[LinkReading]:
    """Read the link while pinned copies flow, so an idle-downclocked link does not read low."""
    import torch

    size = 256 * MIB
    host, device = ops.alloc(size, "pinned", gpu_index), ops.alloc(size, "device", gpu_index)
    with torch.cuda.stream(ops.stream(gpu_index)):
        for _ in range(LINK_PROBE_COPIES):
            device.copy_(host, non_blocking=True)
    readings = reader.read(counters=False)
    torch.cuda.synchronize(gpu_index)
    return readings


def _reading(readings: list[LinkReading], gpu_index: int) -> LinkReading | None:
    return next((r for r in readings if r.index == gpu_index), None)


def _bind_near_gpu(facts: MachineFacts) -> str | None:
    """Run on the GPU's local CPUs (as nvbandwidth does) so pinned pages land on its node."""
    near = set(facts.gpu_local_cpus) & set(facts.process_cpus)
    if near and near != set(facts.process_cpus):
        os.sched_setaffinity(0, near)
        return f"bound to the GPU's local CPUs {sorted(near)} while benchmarking"
    return None


def run(options: RunOptions, emit: Emit) -> int:
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    start_s = time.perf_counter()
    reader: LinkReader | None = None
    try:
        if options.backend == "cuda":
            ops, torch_version, cuda_version = _cuda_ops(options)
            from xfertop.bench.link_nvml import open_link_reader

            reader = open_link_reader()
            before = reader.read()
        else:
            ops, torch_version, cuda_version, before = _cpu_ops(options), None, None, []
        facts = machine.machine_facts(
            ops.name, options.gpu_index, torch_version=torch_version, cuda_version=cuda_version, gpus=before
        )
        if reader is not None:
            facts = dataclasses.replace(facts, gpu_busy_pids=reader.busy_pids(options.gpu_index))
        _bind_near_gpu(facts)
        emit(Hello(ops.name, tuple(options.cases), os.getpid()))
        results = []
        for name in options.cases:
            result = _run_case(ops, name, options, emit, facts)
            results.append(result)
            emit(CaseDone(result))
        links: list[LinkFacts] = []
        if reader is not None:
            under_load = _reading(_link_under_load(ops, options.gpu_index, reader), options.gpu_index)
            first, last = _reading(before, options.gpu_index), _reading(reader.read(), options.gpu_index)
            if first and under_load and last:
                links.append(machine.link_facts(first, under_load, last, reader.source))
    except CouldNotRun as exc:
        emit(Failure(str(exc), EXIT_COULD_NOT_RUN))
        return EXIT_COULD_NOT_RUN
    finally:
        if reader is not None:
            reader.close()
    verdicts = judge_run(results, links, facts, options.thresholds)
    overall = overall_status(verdicts)
    code = exit_code_for(overall)
    emit(
        RunDone(
            BenchRun(
                RUN_SCHEMA,
                "check" if options.check else "bench",
                started,
                round(time.perf_counter() - start_s, 3),
                facts,
                tuple(links),
                tuple(results),
                tuple(verdicts),
                overall,
                code,
                options.thresholds.as_dict(),
            )
        )
    )
    return code
