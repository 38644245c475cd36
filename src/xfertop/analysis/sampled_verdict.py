"""The verdict for a job sampled with py-spy: the step clock's engine, fed with sampled shares.

A sampled window has no steps, only the share of main-thread samples per class (stack_classify).
Those shares stand in for the CPU clock's shares of step wall time, so ``verdict.judge`` applies the
same rules and thresholds; the result is labelled ``"source": "sampled"``. What only sampling sees is
added: a job that has not reached its training loop yet, a sync-bound verdict from samples blocked in
``.item()``-like calls (the step clock infers it from GPU busy time instead), whether the DataLoader
workers are saturated or idle, and, with the GPU's busy share from NVML, whether a GPU that waits waits
for the loop's own code (loop-bound) or for the host dispatching the model (launch-bound).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from xfertop.analysis.advice import (
    CHECKPOINT_REMEDY,
    FOREACH_OPTIMIZER_REMEDY,
    INPUT_NOT_THE_CAUSE,
    NESTED_PASS_REMEDY,
    between_iterations_advice,
    copy_bound_advice,
    hidden_wait_note,
    host_bound_advice,
    new_iterator_advice,
    optimizer_step_advice,
    pct,
    restarts_workers,
    sampled_restarts_advice,
    sync_bound_advice,
    wait_mostly_in_passes,
    workers_mostly_wait,
)
from xfertop.analysis.evidence import CgroupCpuEvidence, Context, WorkersEvidence
from xfertop.analysis.stack_classify import (
    LineText,
    LoopHost,
    RankStacks,
    summarise_window,
    training_process,
)
from xfertop.analysis.steps import Spread, WindowStats
from xfertop.analysis.thresholds import (
    BETWEEN_CRITICAL_SHARE,
    BETWEEN_LEADS_SHARE,
    CHECKPOINT_WARN_SHARE,
    COMPUTE_BOUND_SHARE,
    COPY_CRITICAL_SHARE,
    COPY_WARN_SHARE,
    GPU_BUSY_MIN_SHARE,
    INPUT_CRITICAL_SHARE,
    INPUT_WARN_SHARE,
    LOOP_WARN_SHARE,
    NESTED_PASS_WARN_SHARE,
    OPTIMIZER_LEADS_SHARE,
    STRAGGLER_CRITICAL_EXCESS_SHARE,
    STRAGGLER_VICTIM_COMPUTE_EXCESS_SHARE,
    STRAGGLER_WARN_EXCESS_SHARE,
    SYNC_GPU_BUSY_WARN_SHARE,
    WORKER_START_WAIT_SHARE,
)
from xfertop.analysis.verdict import Severity, Verdict, host_compute_share, judge
from xfertop.model.gpu import GpuState
from xfertop.model.stacks import StacksState, StackWindow

#: Fewer main-thread samples than this (0.8 s at the default 50 Hz) and the verdict is warming-up.
MIN_SAMPLES = 40
#: Samples blocked in .item()/.cpu()/synchronize at or above these shares: sync-bound.
SYNC_WARN_SHARE = INPUT_WARN_SHARE
SYNC_CRITICAL_SHARE = INPUT_CRITICAL_SHARE
#: Workers busy at least this share of the window count as saturated; below the second, as idle.
WORKER_SATURATED_SHARE = 0.8
WORKER_IDLE_SHARE = 0.3
#: A GPU job's main thread in its training loop's own Python code (not data, copy, compute or sync) in
#: at least this share of samples, more than in data or copies: host-bound. The host is then busy
#: where the GPU cannot overlap it once the loop syncs (docs/attach.md). Critical from the second value.
#: With NVML's busy share under GPU_BUSY_MIN_SHARE the same bar, for the loop's Python and tensor maths
#: together, is loop-bound.
LOOP_HOST_WARN_SHARE = 0.3
LOOP_HOST_CRITICAL_SHARE = 0.5
#: ... and the loop itself seen running (data, copies, compute, syncs) in at least this share.
LOOP_STEPPING_MIN_SHARE = 0.1
#: A loop-bound verdict names the smaller of the loop's two parts (its Python, its tensor maths) too
#: from this share.
LOOP_PART_NOTE_SHARE = 0.1
#: Workers run, yet the main thread's own loading holds at least this share of its input samples: a
#: loader with num_workers=0 is read beside one with workers (zipped loaders): that loader needs workers,
#: and the other's idle ones are not the cause.
MAIN_LOADS_SHARE_OF_INPUT = 0.5
#: A healthy verdict names the unrecognised ("other") share when it is at least this.
OTHER_NOTE_SHARE = 0.2
#: At least this share of the main thread's samples outside every phase xfertop recognises: the window
#: is not of a training loop (start-up, teardown, evaluation, checkpointing) and gets no verdict, rather
#: than "healthy" for a job that is not training yet (docs/attach.md).
OUTSIDE_LOOP_SHARE = 0.6
#: At least this share of the main thread's samples in torch.compile's compilation: the window shows the
#: model being compiled (its first steps, or recompiles), not what its steps cost, and gets no verdict of
#: a bottleneck. On the H200 a compiled job attached during its first steps read "launch-bound: the GPU
#: is busy only 16%; the host spends 96% of samples dispatching the model's many small kernels".
COMPILING_SHARE = 0.25
#: ... with the main thread in the model step (module calls, autograd, the optimizer) in at least this
#: share of samples, more than in the loop's own code: launch-bound.
LAUNCH_DISPATCH_SHARE = 0.5
#: NVML averages utilisation over its sample period (up to 1 s) before a reading: a reading this long
#: after a window's end still covers some of it.
GPU_READING_SLACK_S = 1.0
SAMPLED_SUFFIX = " (py-spy samples)"
UNKNOWN_PINNING_ADVICE = (
    "py-spy cannot see whether batches are pinned: set pin_memory=True in the DataLoader and copy with "
    "non_blocking=True (pinned copies ran ~8x faster than pageable ones on an H200)."
)

_NO_SPREAD = Spread(p50_ms=0.0, p95_ms=0.0)


def _window_stats(rank: RankStacks, also_compute: float = 0.0) -> WindowStats:
    """Sampled shares in the shape of a CPU-clock window (no step timings: spreads are zero). Workers
    that ended while the job ran stand in for the steps that started workers again. ``also_compute``:
    samples of other classes counted as compute (a CPU job's loop Python: its host time is its compute;
    a busy GPU's syncs: waits for the model's kernels)."""
    shares = rank.shares
    samples = shares.total_samples
    input_share = shares.input_share
    return WindowStats(
        clock="cpu",
        steps=samples,
        first_step=0,
        last_step=samples,
        wall_ms_total=0.0,
        wall=_NO_SPREAD,
        data_wait_share=shares.input_share,
        data_wait=_NO_SPREAD,
        data_wait_max_ms=0.0,
        data_wait_top_share=0.0,
        copy_share=shares.share("copy"),
        copy=_NO_SPREAD,
        copy_cpu_share=shares.share("copy"),
        compute_share=shares.share("compute") + also_compute,
        compute=_NO_SPREAD,
        gpu_idle_share=None,
        gpu_idle=None,
        samples_per_s=0.0,
        h2d_bytes_per_s=0.0,
        pinned_step_fraction=None,
        pageable_non_blocking_step_fraction=None,
        worker_start_steps=rank.workers_restarted,
        worker_start_wait_share=min(1.0, rank.worker_start_share / input_share) if input_share else 0.0,
        sampled=True,
    )


def workers_now(rank: RankStacks) -> int:
    """DataLoader workers at a time: those sampled, less those that ended (restarted: not more)."""
    return max(1, len(rank.workers) - rank.workers_ended) if rank.workers else 0


def _context(rank: RankStacks) -> Context:
    """Where the workers may run and the cgroup's CPU quota, from /proc around the window."""
    placement = rank.placement
    cgroup = None
    if placement is not None and placement.cpu_quota_cores is not None:
        cgroup = CgroupCpuEvidence(
            placement.cpu_quota_cores,
            placement.cpu_quota_file,
            placement.cpu_throttled_share,
            placement.cpu_quota_used_share,
        )
    workers = None
    if rank.workers and rank.workers_allowed_cpus:
        workers = WorkersEvidence(
            count=workers_now(rank),
            allowed_cpus=rank.workers_allowed_cpus,
            cpu_percent=rank.workers_cpu_percent,
            allowed_cores_busy_percent=rank.workers_cores_busy_percent,
            cpu_quota_cores=cgroup.quota_cores if cgroup else None,
            cpu_quota_file=cgroup.quota_file if cgroup else None,
            cpu_throttled_share=cgroup.throttled_share if cgroup else None,
            cpu_quota_used_share=cgroup.used_share if cgroup else None,
            host_cores=(len(placement.cores_busy_percent) or None) if placement is not None else None,
            run_delay_percent=rank.workers_run_delay_percent,
        )
    # Samples show host time only: a pinned, non_blocking copy costs the host nothing, so a small copy
    # share proves nothing about PCIe (no "Do not tune PCIe"); of the GPU's own figures only its busy
    # share is here (for the evidence: the rules that read it are this module's).
    return Context(on_gpu=False, workers=workers, cgroup_cpu=cgroup, gpu_busy_share=rank.gpu_busy_share)


def _evidence(rank: RankStacks, ranks: int) -> dict[str, Any]:
    summary = rank.to_dict()
    evidence: dict[str, Any] = {"source": "sampled", "ranks": ranks}
    evidence.update({k: v for k, v in summary.items() if k != "error"})
    return evidence


def _worker_advice(rank: RankStacks, context: Context) -> list[str]:
    if not rank.workers:
        return []  # the engine's num_workers=0 advice covers it
    if rank.workers_restarted:
        return []  # restarted: the restart advice covers them, and more workers is not it
    mean_busy = rank.workers_mean_busy or 0.0
    if mean_busy >= WORKER_SATURATED_SHARE:
        count = workers_now(rank)
        workers = context.workers
        if workers is not None and workers_mostly_wait(workers, count):
            # Inside __getitem__ all the time, on little CPU: a sleep or storage, not their cost. The
            # engine's advice says so and asks for more workers ("... they mostly wait").
            return []
        free = workers is not None and not workers.saturated and count < workers.effective_cores
        # Where their cores are confined or busy, the engine's advice says so (and what to do).
        more = (
            ", or add workers (their cores have room)"
            if free
            else ", or add workers if cores are free"
            if workers is None
            else ""
        )
        return [
            f"All {count} DataLoader workers are busy {pct(mean_busy)} of the time: make "
            f"__getitem__ / transforms cheaper{more}."
        ]
    if mean_busy < WORKER_IDLE_SHARE:
        pin = ""
        if rank.pin_busy_share is not None:
            pin = f"; the pin-memory thread is busy {pct(rank.pin_busy_share)}"
        return [
            f"The workers are mostly idle ({pct(mean_busy)} busy) while the main thread waits: suspect "
            f"inter-process transfer of large batches or the pin-memory thread{pin}."
        ]
    return []


def _labelled(verdict: Verdict, rank: RankStacks, ranks: int, extra_advice: list[str]) -> Verdict:
    return Verdict(
        kind=verdict.kind,
        severity=verdict.severity,
        headline=verdict.headline + SAMPLED_SUFFIX,
        evidence=_evidence(rank, ranks),
        advice=tuple(extra_advice) + verdict.advice,
        rule=verdict.rule or verdict.kind,
    )


def waits_for_busy_gpu(rank: RankStacks) -> float:
    """The share of samples in which the main thread waits (.item(), synchronize) for a GPU that NVML
    says is at least SYNC_GPU_BUSY_WARN_SHARE busy with this process's work: the host waits for the model's
    kernels, and the GPU waits for nothing. That is the model's compute seen from the host, as the step
    clock and the synchronised truth count it, not a sync that holds the GPU back; 0 elsewhere."""
    busy = rank.gpu_busy_share  # known only for a process NVML lists on a GPU
    if busy is None or busy < SYNC_GPU_BUSY_WARN_SHARE:
        return 0.0
    return rank.shares.share("gpu_sync")


def runs_on_gpu(rank: RankStacks) -> bool:
    """A CUDA process (it maps /dev/nvidiactl), or one NVML lists on a GPU."""
    placement = rank.placement
    return bool(placement is not None and placement.uses_cuda) or rank.gpu_busy_share is not None


def rank_sampled_verdict(rank: RankStacks, ranks: int = 1) -> Verdict:
    """The verdict on one rank's sampled window."""
    samples = rank.shares.total_samples
    if rank.error or samples < MIN_SAMPLES:
        headline = rank.error or f"warming-up: {samples} of the {MIN_SAMPLES} samples a verdict needs"
        return Verdict("warming-up", "info", headline, _evidence(rank, ranks), rule="warming-up")
    if not rank.loop_seen:
        # Start-up (building data, the model, compiling) is no step: its tensor maths is not compute.
        return _labelled(_not_in_loop_yet(rank), rank, ranks, [])
    if rank.compiling_share >= COMPILING_SHARE:
        return _labelled(_compiling(rank), rank, ranks, [])
    loop = rank.loop_host
    busy = rank.gpu_busy_share
    on_gpu = runs_on_gpu(rank)
    # On a CPU the loop's own Python runs on the same cores as the model: it is compute, as the step clock
    # and the truth count it (an .item() of a CPU tensor in a process known to use no GPU was classified
    # so already: summarise_window). On a busy GPU a sync waits for the model's kernels: compute too.
    gpu_waits = waits_for_busy_gpu(rank)
    stats = _window_stats(rank, also_compute=(0.0 if on_gpu else loop.share) + gpu_waits)
    other_share = rank.shares.share("other")
    # The loop's own Python code, the checkpoints it writes and its own iterable are in the loop.
    between = rank.between_passes
    validating = rank.loop_validation
    outside_share = (
        other_share
        - loop.share
        - rank.loop_checkpoint.share
        - rank.loop_iterable.share
        - validating.share
        - between.share
    )
    if between.share >= BETWEEN_LEADS_SHARE:
        # The script's own code between the loader's passes, as `xfertop run` measures it between steps.
        return _labelled(_between_passes_bound(between), rank, ranks, [])
    if outside_share >= OUTSIDE_LOOP_SHARE:
        where = f"; the main thread is mostly {rank.outside_at}" if rank.outside_at is not None else ""
        headline = (
            f"not in a training loop: {pct(outside_share)} of samples are outside the phases xfertop "
            f"recognises (start-up, teardown, evaluation, checkpointing, or a loop it does not know){where}"
        )
        return _labelled(Verdict("warming-up", "info", headline, rule="not-in-loop"), rank, ranks, [])
    # The GPU's busy share where it waits for the host, else None.
    waiting_busy = busy if on_gpu and busy is not None and busy < GPU_BUSY_MIN_SHARE else None
    own = (
        loop.share
        + rank.loop_tensor.share
        + rank.loop_checkpoint.share
        + rank.loop_iterable.share
        + validating.share
    )
    sync_share = rank.shares.share("gpu_sync")
    # With the GPU mostly idle a sync waits for little: it is named only where it holds more of the
    # host than the model's dispatch or the loop's own code (a launch-bound loop's loss.item()).
    sync_leads = waiting_busy is None or sync_share > max(rank.dispatch_share, own)
    if (
        sync_share >= SYNC_WARN_SHARE
        and sync_share > max(stats.input_share, stats.copy_share)
        and sync_leads
        and not gpu_waits
    ):
        headline = (
            f"sync-bound: the main thread waits for the GPU (.item(), .cpu(), synchronize) in "
            f"{pct(sync_share)} of samples"
        )
        severity: Severity = "critical" if sync_share >= SYNC_CRITICAL_SHARE else "warn"
        verdict = Verdict("sync-bound", severity, headline, advice=tuple(sync_bound_advice()))
        return _labelled(verdict, rank, ranks, [])
    host_waits = max(stats.input_share, stats.copy_share)  # what the judge's own rules would name
    if (
        waiting_busy is not None
        and own >= LOOP_HOST_WARN_SHARE
        and own > max(host_waits, rank.dispatch_share)
    ):
        return _labelled(_loop_bound(rank, waiting_busy), rank, ranks, [])
    if not on_gpu and own >= LOOP_WARN_SHARE and own > host_waits:
        # On a CPU every part is the step's own time, and `xfertop run` names the loop's work where it is
        # 10% of the step or more and more than the input's and the copies' (its loop-work rule, the
        # largest part past its bar): attach reads the same job the same way.
        return _labelled(_loop_bound(rank, None), rank, ranks, [])
    stepping = 1.0 - other_share  # data, loading, copies, compute, syncs: the loop runs
    # The loop's own code idled the GPU for at most what NVML saw idle over the window: on a busy GPU a
    # line of it is mostly a sync in disguise (float(tensor), a tensor in an f-string). Scenario k
    # attached on an H100 read "host-bound (likely): ... 59% of samples in the training loop's own
    # Python" from its `float(correct)` after each validation pass, with the GPU busy 99%. The bound
    # decides whether the loop's code can hold the GPU back; which of it and the waits is larger is
    # still read from the samples.
    felt = loop.share if busy is None else min(loop.share, 1.0 - busy)
    if (
        on_gpu
        and felt >= LOOP_HOST_WARN_SHARE
        and stepping >= LOOP_STEPPING_MIN_SHARE
        and loop.share > host_waits
    ):
        return _labelled(
            _loop_host_bound(loop, rank.loop_host_before_model, rank.loader_seen), rank, ranks, []
        )
    saving = rank.loop_checkpoint
    held = max(saving.share, rank.loop_iterable.share)
    if busy is None and held >= LOOP_HOST_WARN_SHARE and held > max(host_waits, _model_share(rank)):
        # A GPU job whose busy share is unknown: checkpoints or the loop's own iterable building its
        # batches hold the loop (a CPU job's were judged above, with the rest of the loop's own work).
        return _labelled(_loop_bound(rank, None), rank, ranks, [])
    # Launch-bound by `xfertop run`'s bar for a GPU the host holds back (busy under 70%), not the 50% one
    # above: on the H200 a job with clip_grad_norm_ and a tiny MLP, busy 48-55%, read launch-bound under run
    # and, attached with its GPU 55% busy, "copy-bound" from 16% of samples on its .to() line.
    # Where the GPU waits for the host (busy under 50%), whatever the host does is the GPU's idle, and
    # `xfertop run` names the largest part past its 10% bar: a dispatch ahead of the input, the copies and
    # the loop's own work is launch-bound too (on the H100 a torch.func job, GPU 5% busy, read
    # launch-bound under run and input-bound attached, from 19% of samples in the loader).
    starved_busy = busy if on_gpu and busy is not None and busy < SYNC_GPU_BUSY_WARN_SHARE else None
    dispatch_leads = rank.dispatch_share > own and (
        rank.dispatch_share >= LAUNCH_DISPATCH_SHARE
        or (
            waiting_busy is not None
            and rank.dispatch_share >= INPUT_WARN_SHARE
            and rank.dispatch_share > host_waits
        )
    )
    if starved_busy is not None and dispatch_leads:
        return _labelled(_launch_bound(rank, starved_busy), rank, ranks, [])
    copy_share = stats.copy_share
    if copy_share >= COPY_WARN_SHARE and (
        stats.input_share < INPUT_WARN_SHARE or copy_share > stats.input_share
    ):
        return _labelled(_copy_bound(stats), rank, ranks, [])
    verdict, extra = _judged(rank, stats, on_gpu, outside_share)
    if verdict.kind == "input-bound" and rank.queue_wait_share * 2 >= stats.input_share:
        verdict, extra = _queue_bound(rank, verdict), []
    if saving.share >= CHECKPOINT_WARN_SHARE:
        extra = [_checkpoint_advice(saving), *extra]
    if validating.share >= NESTED_PASS_WARN_SHARE:
        extra = [_validation_advice(validating), *extra]
    return _labelled(verdict, rank, ranks, extra)


def _compiling(rank: RankStacks) -> Verdict:
    headline = (
        f"compiling: torch.compile holds the main thread {pct(rank.compiling_share)} of samples (tracing the "
        "model and generating its code); the steps after it are the ones to judge"
    )
    advice = (
        "If this lasts beyond the first steps, the model is compiled again and again: shapes or Python "
        "values that change from step to step cause recompiles. TORCH_LOGS=recompiles names each one and "
        "why; mark the dimensions that vary with torch._dynamo.mark_dynamic, or pad to a few fixed shapes.",
    )
    return Verdict("warming-up", "info", headline, advice=advice, rule="compiling")


def _judged(
    rank: RankStacks, stats: WindowStats, on_gpu: bool, outside_share: float
) -> tuple[Verdict, list[str]]:
    """The step clock's own rules on the sampled window (none of the sampled-only rules applied), and
    the advice only samples can add: the loop's lines, where the loader runs, what the GPU does."""
    loop = rank.loop_host
    # Its lines are named, since mixed precision or torch.compile will not touch them.
    cpu_loop = (
        []
        if on_gpu or loop.share < LOOP_HOST_WARN_SHARE
        else [_cpu_loop_python(loop, rank.loop_host_before_model, rank.loader_seen)]
    )
    main_loads = _main_thread_loads(rank)
    workers = workers_now(rank) if rank.workers else (0 if rank.shares.share("main_loading") > 0 else None)
    if main_loads:
        workers = 0  # the loader that holds the loop up is read in the main process
    # No sample in a loader is no proof that the loop reads none (a quick one with num_workers=0).
    context = replace(_context(rank), loader_unknown=workers is None)
    verdict = judge(stats, dataloader_workers=workers, context=context)
    extra = cpu_loop
    sampler = rank.sampler
    in_passes = wait_mostly_in_passes(rank.loop_validation_wait_share, stats.input_share)
    passes = [_validation_wait_advice(rank)] if in_passes else []
    if verdict.kind == "input-bound" and passes:
        # As `xfertop run` says of the same job: the wait is the validation passes' loader's.
        headline = f"{verdict.headline}, mostly in validation passes inside the training run"
        verdict = replace(verdict, headline=headline, advice=(*passes, *verdict.advice))
    if verdict.kind == "input-bound" and rank.new_iterator_line and _iterators_hold_the_wait(rank, stats):
        seen = (
            f"The main thread starts and stops a loader's iterator in {pct(rank.worker_start_share)} of "
            f"samples, on the loop's line {rank.new_iterator_line}, where it also asks for each batch."
        )
        verdict = replace(verdict, advice=(new_iterator_advice(seen, bool(rank.workers)),))
    elif (
        verdict.kind == "input-bound" and rank.receive_share * 2 >= stats.input_share and _workers_idle(rank)
    ):
        # The main thread unpacks what idle workers made: neither cheaper samples nor more workers help.
        # (Busy workers answer its requests for their tensors late: there the workers are the cost.)
        headline = (
            f"{verdict.headline}: the main thread unpacks the workers' tensors ({pct(rank.receive_share)} "
            "of samples)"
        )
        # Workers that ended while the job ran were started again meanwhile (a validation loader without
        # persistent_workers at each pass): that first, as for any input-bound window.
        restarts = [sampled_restarts_advice(stats)] if restarts_workers(stats) else []
        verdict = replace(verdict, headline=headline, advice=(*passes, *restarts, _receive_advice(rank)))
    elif verdict.kind == "input-bound" and sampler.share * 2 >= stats.input_share:
        # The wait is the main thread's own work drawing indices: no worker runs a sampler, so neither
        # more workers nor cheaper samples shorten it.
        headline = (
            f"{verdict.headline}: the main thread draws the indices in its sampler ({pct(sampler.share)} "
            "of samples)"
        )
        verdict = replace(verdict, headline=headline, advice=(_sampler_advice(sampler),))
    elif verdict.kind == "input-bound":
        extra = extra + (main_loads or _worker_advice(rank, context))
        if sampler.share >= LOOP_WARN_SHARE:
            extra.append(_sampler_advice(sampler))
    if on_gpu and verdict.kind in ("compute-bound", "healthy"):
        verdict, gpu_extra = _gpu_compute(verdict, rank, stats)
        extra = extra + gpu_extra
    if verdict.kind == "healthy" and outside_share >= OTHER_NOTE_SHARE:
        # The engine's "healthy" reads data/copy/compute only; say where the rest of the samples went.
        verdict = replace(
            verdict,
            headline=f"{verdict.headline}; {pct(outside_share)} of samples are outside the training "
            "phases xfertop recognises",
        )
    return verdict, extra


def _copy_bound(stats: WindowStats) -> Verdict:
    """The step clock's copy rule, on samples: the engine's own believes a copy share only where the bytes
    moved explain it, and py-spy sees no bytes. Nor can it see whether batches are pinned: the advice says
    so instead of the step clock's claim about it."""
    share = stats.copy_share
    headline = f"copy-bound: the main thread copies to the device (.to(), .cuda()) in {pct(share)} of samples"
    severity: Severity = "critical" if share >= COPY_CRITICAL_SHARE else "warn"
    advice = [a for a in copy_bound_advice(stats) if "pinned" not in a and "pageable" not in a]
    return Verdict(
        "copy-bound", severity, headline, advice=(UNKNOWN_PINNING_ADVICE, *advice), rule="copy-bound"
    )


def _not_in_loop_yet(rank: RankStacks) -> Verdict:
    at = rank.outside_at
    doing = (
        f"the main thread is {at}, {pct(at.share)} of samples"
        if at is not None
        else "the main thread runs no code of the job's own that py-spy could name"
    )
    headline = f"not in the training loop yet: {doing}; no DataLoader, model or optimizer call seen"
    return Verdict("warming-up", "info", headline, rule="not-in-loop-yet")


def _gpu_compute(verdict: Verdict, rank: RankStacks, stats: WindowStats) -> tuple[Verdict, list[str]]:
    """A GPU job's compute-bound or healthy window: samples see the host only, so its compute is the
    GPU's only where NVML says the GPU is busy. Under GPU_BUSY_MIN_SHARE compute-bound is vetoed (the host
    holds the GPU back); unmeasured, the headline says so instead of guessing. Returns the verdict and
    the advice to add."""
    busy = rank.gpu_busy_share
    compute = pct(stats.compute_share)
    # The engine reads compute-bound from the GPU's busy share where NVML has one; the samples alone
    # would call this much host time in the model compute-bound.
    host_computes = host_compute_share(stats) >= COMPUTE_BOUND_SHARE
    if busy is not None and busy < GPU_BUSY_MIN_SHARE and (verdict.kind == "compute-bound" or host_computes):
        headline = (
            f"host-bound: the GPU is busy only {pct(busy)} while the main thread computes in {compute} of "
            "samples: the host holds it back"
        )
        return Verdict("host-bound", "critical", headline, advice=tuple(host_bound_advice()[:2])), []
    busy_text = f"; the GPU is busy {pct(busy)}" if busy is not None else ""
    compute_text = "compute" if busy is not None else "compute (GPU busy not measured)"
    waits = waits_for_busy_gpu(rank)
    if waits >= SYNC_WARN_SHARE:  # named: the samples alone would read sync-bound
        busy_text += f", the host waiting for it in .item()-like calls in {pct(waits)} of samples"
    if verdict.kind == "compute-bound":
        headline = f"compute-bound: {compute_text} is {compute} of samples{busy_text}"
        if verdict.evidence.get("hidden_wait"):  # the GPU kept busy through the loop's waits
            headline += hidden_wait_note(stats.input_share)
    else:
        headline = (
            f"healthy: data {pct(stats.input_share)}, copy {pct(stats.copy_share)}, {compute_text} {compute} "
            f"of samples{busy_text}"
        )
    tensor = rank.loop_tensor
    extra = []
    if busy is None and tensor.share >= LOOP_HOST_WARN_SHARE:
        extra.append(
            f"{pct(tensor.share)} of samples are tensor maths on the training loop's own lines "
            f"({_top_lines_text(tensor)}), outside the model: on CPU tensors that is host work the GPU "
            "waits for (NVML gave no busy share for this process to tell)."
        )
    return replace(verdict, headline=headline), extra


def _main_thread_loads(rank: RankStacks) -> list[str]:
    """Workers run, yet the main thread itself loads most of what it waits for: a loader with
    num_workers=0 is read in the loop beside one with workers (zip of two loaders)."""
    loading = rank.main_fetch_share
    if not rank.workers or loading <= 0 or loading < MAIN_LOADS_SHARE_OF_INPUT * rank.shares.input_share:
        return []
    count = workers_now(rank)
    return [
        f"The main thread runs a Dataset itself in {pct(loading)} of samples although {count} DataLoader "
        f"worker{'s' if count != 1 else ''} run: a loader with num_workers=0 is read in the loop beside one "
        "with workers. That loader is the one to give workers."
    ]


def _iterators_hold_the_wait(rank: RankStacks, stats: WindowStats) -> bool:
    """Starting and stopping iterators holds a large part of the window's input share."""
    return rank.worker_start_share >= WORKER_START_WAIT_SHARE * stats.input_share


def _between_passes_bound(between: LoopHost) -> Verdict:
    headline = (
        f"loop-bound: {pct(between.share)} of samples are between the loader's iterations, in the script's "
        f"own code after each pass (most on {_top_lines_text(between)})"
    )
    severity: Severity = "critical" if between.share >= BETWEEN_CRITICAL_SHARE else "warn"
    advice = (between_iterations_advice(between.share, name_it=False),)
    return Verdict("loop-bound", severity, headline, advice=advice, rule="between-iterations")


def _workers_idle(rank: RankStacks) -> bool:
    busy = rank.workers_mean_busy
    return busy is not None and busy < WORKER_IDLE_SHARE


def _receive_advice(rank: RankStacks) -> str:
    busy = rank.workers_mean_busy or 0.0
    return (
        f"The main thread rebuilds the tensors of the workers' batches in {pct(rank.receive_share)} of "
        f"samples while the workers are busy {pct(busy)}: each tensor of a batch crosses from its worker "
        "as its own shared-memory handle, so a batch of many small tensors (lists of per-sample tensors "
        "from a collate_fn that does not stack them), or one that costs almost nothing to make (tensors "
        "already in memory), costs more to pass than to make. Return a few large tensors per batch (stack "
        "or pad in collate_fn; concatenate variable-size fields with offsets); for data already in "
        "memory, num_workers=0 passes nothing; or call "
        "torch.multiprocessing.set_sharing_strategy('file_system') before the loaders are made."
    )


def _sampler_advice(sampler: LoopHost) -> str:
    return (
        f"The main thread draws each batch's indices from the loader's sampler in {pct(sampler.share)} of "
        f"samples (most on {_top_lines_text(sampler)}): DataLoader workers never run the sampler, so more "
        "workers cannot help. Make it cheap: draw an epoch's indices at once (torch.multinomial or "
        "torch.randperm over a tensor of weights) in __iter__ and yield from that list."
    )


def _top_lines_text(loop: LoopHost) -> str:
    """The loop body's busiest lines: "train.py:45 40%, train.py:43 5%"."""
    return ", ".join(f"{line} {pct(share)}" for line, share in loop.top_lines)


def _cpu_loop_python(loop: LoopHost, before_model: bool = False, loader_seen: bool = True) -> str:
    lines = _top_lines_text(loop)
    if before_model:
        return (
            f"{pct(loop.share)} of samples are the training loop's own Python before the model (the loop "
            f"at {loop.loop_line}; most on {lines}): {_before_model_remedy(loader_seen)} Mixed precision or "
            "torch.compile would speed up only the model's share."
        )
    return (
        f"{pct(loop.share)} of samples are the training loop's own Python (the loop at {loop.loop_line}; "
        f"most on {lines}), not the model: do per-step bookkeeping (metrics, logging, json) every N steps "
        "or off the loop. Mixed precision or torch.compile would speed up only the model's share."
    )


#: What the loop's own Python between the batch and the model should become (as `xfertop run`'s
#: loop-bound advice for the loop's work before the model says it).
BEFORE_MODEL_REMEDY = (
    "it runs in the main process, one batch at a time, between the loader and the model: move it into "
    "the Dataset's __getitem__ (or a collate_fn) so the DataLoader workers run it in parallel, ahead of "
    "the loop."
)
#: The same work in a loop that reads no DataLoader (session 48's trial: an RL loop stepping its
#: environment between the policy's actions was told to move it into a Dataset it does not have).
_OWN_DATA_REMEDY = (
    "the loop makes its own data (a generator, a list, an environment or a simulator it steps). Make fixed "
    "data in a Dataset read through a DataLoader with workers, so it is made in parallel, ahead of the "
    "loop; step an environment in several copies at once (vectorised) or in worker processes, and keep "
    "its observations as tensors rather than converting them every step."
)
NO_LOADER_REMEDY = (
    "it runs in the main process, one step at a time, and no DataLoader appears in the samples: "
    + _OWN_DATA_REMEDY
)


def _before_model_remedy(loader_seen: bool) -> str:
    return BEFORE_MODEL_REMEDY if loader_seen else NO_LOADER_REMEDY


def _bookkeeping_advice(
    loop: LoopHost, on_gpu: bool = True, before_model: bool = False, loader_seen: bool = True
) -> str:
    """The loop's own Python: bookkeeping after the step, or (``before_model``) the batch's own
    preparation between the loader and the model (tokenising, converting, augmenting)."""
    if before_model:
        return (
            f"Most of it on {_top_lines_text(loop)}: the loop's own Python before the model (tokenising, "
            f"converting or augmenting the batch); {_before_model_remedy(loader_seen)}"
        )
    # A loop that reads no DataLoader may be making its data after the model's call: the environment an
    # RL policy acts in, stepped between its actions.
    own_data = (
        ""
        if loader_seen
        else " No DataLoader appears in the samples: where these lines make the loop's data (an environment "
        "or a simulator it steps), step several copies at once (vectorised) or in worker processes."
    )
    if not on_gpu:
        return (
            f"Most of it on {_top_lines_text(loop)}: per-step work of the loop's own (metrics, confusion "
            "counts, logging, a wait or a sleep of its own) that holds each step: do it every N steps, off "
            "the loop, or as a few tensor ops over the batch instead of a Python loop over its items."
            + own_data
        )
    return (
        f"Most of it on {_top_lines_text(loop)}: move per-step bookkeeping (metrics, confusion counts, "
        "logging) onto the GPU as tensor ops, or do it every N steps; a .item()/.cpu()/.tolist() that feeds "
        "it makes the GPU wait for it every step (loss.item(): accumulate the loss on the GPU instead). A "
        "line that turns a tensor into a Python value (float(loss), printing it, `if loss.isnan():`) waits "
        f"for the GPU too: there the GPU, not the host, may be the cost.{own_data}"
    )


def _loop_host_bound(loop: LoopHost, before_model: bool = False, loader_seen: bool = True) -> Verdict:
    # py-spy sees the host only: the GPU's own utilisation is not in the window, and an implicit
    # sync (float(loss), an f-string of a tensor, `if loss.isnan():`) also reads as the loop's code.
    headline = (
        f"host-bound (likely): the main thread spends {pct(loop.share)} of samples in the training "
        f"loop's own Python code (the loop at {loop.loop_line}; not data, copies, the model or syncs)"
    )
    severity: Severity = "critical" if loop.share >= LOOP_HOST_CRITICAL_SHARE else "warn"
    advice = (
        _bookkeeping_advice(loop, before_model=before_model, loader_seen=loader_seen),
        *host_bound_advice()[1:2],
    )
    return Verdict("host-bound", severity, headline, advice=advice, rule="host-bound")


def _model_share(rank: RankStacks) -> float:
    """The model step's share of the main thread's samples: its module calls, autograd and optimizer, or
    the compute not on the loop's own lines, whichever says more."""
    return max(rank.dispatch_share, rank.shares.share("compute") - rank.loop_tensor.share)


def _queue_bound(rank: RankStacks, judged: Verdict) -> Verdict:
    """Input-bound where most of the wait is the loop's own queue.get() or future.result(): no DataLoader
    to tune."""
    headline = (
        f"input-bound: the training loop waits in {rank.queue_wait_in} for its batches in "
        f"{pct(rank.queue_wait_share)} of samples (a producer of the job's own makes them, not a DataLoader)"
    )
    advice = (
        "The producer that makes the batches (the processes or threads that fill the queue or run the "
        "futures) is slower than the training step: run more of them or keep more requests in flight, make "
        "each batch cheaper to build or fetch, or build the batches in a Dataset read through a DataLoader "
        "with workers (num_workers, prefetch_factor).",
    )
    return replace(judged, headline=headline, advice=advice, rule="queue-wait")


def _iterable_advice(iterable: LoopHost, wraps_loader: bool = False) -> str:
    if wraps_loader:
        # A progress bar or statistics around the DataLoader: its own per-batch work, not batch building.
        return (
            f"The loop's own iterable around its DataLoader (the loop at {iterable.loop_line}) works in the "
            f"main thread between batches in {pct(iterable.share)} of samples ({_top_lines_text(iterable)}): "
            "a progress display, statistics or logging per batch. Do it every N batches or keep it cheaper "
            "(tqdm's mininterval, running sums instead of recomputing over the history)."
        )
    return (
        f"The loop's own iterable (the loop at {iterable.loop_line}) builds each batch in the main thread "
        f"in {pct(iterable.share)} of samples ({_top_lines_text(iterable)}): make it a Dataset (or "
        "IterableDataset) read through a DataLoader with workers, so batches are built in parallel, ahead "
        "of the loop."
    )


def _checkpoint_advice(saving: LoopHost) -> str:
    return (
        f"Checkpoints the loop writes (torch.save; {_top_lines_text(saving)}) hold the main thread "
        f"{pct(saving.share)} of samples: {CHECKPOINT_REMEDY}"
    )


def _validation_wait_advice(rank: RankStacks) -> str:
    return (
        f"Most of the wait is in validation passes inside the training run "
        f"({_top_lines_text(rank.loop_validation)}): {pct(rank.loop_validation_wait_share)} of samples wait "
        "for their loader's batches. The advice below is for that loader; validating less often or on "
        "fewer batches (eval_steps, val_check_interval, limit_val_batches) cuts the wait too."
    )


def _validation_advice(validating: LoopHost) -> str:
    return (
        f"Validation passes inside the training run ({_top_lines_text(validating)}) hold the main thread "
        f"{pct(validating.share)} of samples besides their waits for data: {NESTED_PASS_REMEDY}"
    )


def _loop_bound(rank: RankStacks, busy: float | None) -> Verdict:
    """The loop's own code holds the main thread: while the GPU waits (``busy``, its NVML share), or on
    a CPU job (None), where it holds more of the cores than the model step. Its parts (tensor maths,
    Python bookkeeping, checkpoints, the batches its own iterable builds) are named with their remedies,
    the largest first."""
    tensor, python = rank.loop_tensor, rank.loop_host
    saving, iterable, validating = rank.loop_checkpoint, rank.loop_iterable, rank.loop_validation
    own = tensor.share + python.share + saving.share + iterable.share + validating.share
    if busy is not None:
        meanwhile = f"while the GPU is busy {pct(busy)}"
        where = "on CPU tensors it runs on the host, one batch at a time, while the GPU waits"
        elsewhere = ", or onto the GPU after the copy (copy the raw batch, then transform the CUDA tensor)"
    else:
        meanwhile = f"and the model step {pct(_model_share(rank))}"
        where = "it runs in the main process, one batch at a time, between the loader and the model"
        elsewhere = ""
    named = {
        "saving checkpoints": saving.share,
        (
            "its own iterable around the DataLoader"
            if rank.loop_iterable_wraps_loader
            else "building batches in its own iterable"
        ): iterable.share,
        "validation passes": validating.share,
    }
    what = max(named, key=lambda name: named[name])
    mostly = f" (mostly {what})" if named[what] > max(tensor.share, python.share) else ""
    if not mostly and python.share > tensor.share and rank.loop_host_before_model:
        mostly = " before the model"  # as `xfertop run` names the loop's work between batch and model
    headline = (
        f"loop-bound: the loop's own code{mostly} holds the main thread {pct(own)} of samples {meanwhile}"
    )
    severity: Severity = "critical" if own >= LOOP_HOST_CRITICAL_SHARE else "warn"
    into = (
        f"Move it into the Dataset (__getitem__ or a transform) so the DataLoader workers run it in "
        f"parallel{elsewhere}."
        if rank.loader_seen
        else f"No DataLoader appears in the samples: {_OWN_DATA_REMEDY}"
    )
    maths = (
        f"tensor maths on the loop's own lines ({_top_lines_text(tensor)}; the loop at {tensor.loop_line}), "
        f"outside the model: {where}. {into}"
    )
    if rank.loop_tensor_after_model:
        maths = (
            f"tensor maths on the loop's own lines after the model's step ({_top_lines_text(tensor)}; "
            f"the loop at {tensor.loop_line}: an evaluation, an EMA of the weights, metrics on tensors): "
            "do it less often, or in fewer, fused ops (torch.optim.swa_utils.AveragedModel with "
            "get_ema_multi_avg_fn updates an EMA with foreach kernels)."
        )
    bookkeeping = _bookkeeping_advice(
        python,
        on_gpu=busy is not None,
        before_model=rank.loop_host_before_model,
        loader_seen=rank.loader_seen,
    )
    iterable_advice = _iterable_advice(iterable, rank.loop_iterable_wraps_loader)
    parts = [
        (tensor.share, f"Most of it is {maths}", f"{pct(tensor.share)} more is {maths}"),
        (python.share, bookkeeping, f"The loop's own Python adds {pct(python.share)}. {bookkeeping}"),
        (saving.share, _checkpoint_advice(saving), _checkpoint_advice(saving)),
        (iterable.share, iterable_advice, iterable_advice),
        (validating.share, _validation_advice(validating), _validation_advice(validating)),
    ]
    parts.sort(key=lambda part: -part[0])  # stable: tensor maths first on a tie, as before
    (_, first, _), *rest = parts
    advice = [first, *(more for share, _, more in rest if share >= LOOP_PART_NOTE_SHARE)]
    return Verdict("loop-bound", severity, headline, advice=tuple(advice), rule="loop-bound")


def _launch_bound(rank: RankStacks, busy: float) -> Verdict:
    if rank.optimizer_share >= OPTIMIZER_LEADS_SHARE * rank.dispatch_share:
        return _optimizer_bound(rank, busy)
    headline = (
        f"launch-bound: the GPU is busy only {pct(busy)}; the host spends {pct(rank.dispatch_share)} of "
        "samples dispatching the model's many small kernels"
    )
    advice = (
        "Give the GPU fewer, bigger kernels: a larger batch (the same kernels each do more work), fewer "
        "and wider layers, fused ops.",
        'torch.compile(model) fuses small ops; mode="reduce-overhead" also captures the step as CUDA '
        "graphs, launched as one.",
        FOREACH_OPTIMIZER_REMEDY,
        INPUT_NOT_THE_CAUSE,
    )
    return Verdict("launch-bound", "critical", headline, advice=advice, rule="launch-bound")


def _optimizer_bound(rank: RankStacks, busy: float) -> Verdict:
    """Most of the host's model step is an optimizer's step: kernels launched per parameter, or, where its
    parameters live in host memory (an offloaded optimizer), the CPU's own arithmetic. Samples cannot tell
    the two apart (`xfertop run` can: its cpu-optimizer rule); the advice covers both, the launches first."""
    headline = (
        f"launch-bound: the GPU is busy only {pct(busy)}; the host spends {pct(rank.optimizer_share)} of "
        f"samples in the optimizer's step ({pct(rank.dispatch_share)} in the model's step in all)"
    )
    return Verdict(
        "launch-bound", "critical", headline, advice=tuple(optimizer_step_advice()), rule="launch-bound"
    )


def _straggler(ranks: Sequence[tuple[int | None, RankStacks]]) -> Verdict | None:
    inputs = [r.shares.input_share for _, r in ranks]
    worst = max(range(len(ranks)), key=lambda i: inputs[i])
    # The others' median, as the step clock's straggler has it: with the straggler in it, two ranks read
    # "85% (median 45%)" where the other waited 5% (session 46's trial).
    median_input = statistics.median(share for i, share in enumerate(inputs) if i != worst)
    label, rank = ranks[worst]
    excess = inputs[worst] - median_input
    others_compute = statistics.median(
        r.shares.share("compute") for i, (_, r) in enumerate(ranks) if i != worst
    )
    victim_excess = others_compute - rank.shares.share("compute")
    if excess < STRAGGLER_WARN_EXCESS_SHARE or victim_excess < STRAGGLER_VICTIM_COMPUTE_EXCESS_SHARE:
        return None
    name = f"rank {label}" if label is not None else f"pid {rank.pid}"
    headline = (
        f"straggler: {name} waits for data in {pct(inputs[worst])} of samples (the others' median "
        f"{pct(median_input)}); the other ranks wait for it"
    )
    severity: Severity = "critical" if excess >= STRAGGLER_CRITICAL_EXCESS_SHARE else "warn"
    evidence = {
        **_evidence(rank, len(ranks)),
        "straggler_rank": label,
        "median_input_share": round(median_input, 4),
    }
    return Verdict(
        "straggler",
        severity,
        headline + SAMPLED_SUFFIX,
        evidence,
        (f"Inspect input loading on {name}: its DataLoader workers, CPU load and storage.",),
        rule="straggler",
    )


def sampled_verdict(ranks: Sequence[tuple[int | None, RankStacks]]) -> Verdict:
    """The verdict on a sampled job: ``(rank number or None, that rank's window summary)`` per rank.

    One rank is judged alone; several give a straggler when one stands out, else the verdict of the
    rank with the median input share (so one bad rank neither hides nor fakes a job-wide bottleneck).
    """
    usable = [(label, r) for label, r in ranks if not r.error and r.shares.total_samples >= MIN_SAMPLES]
    if not usable:
        return (
            rank_sampled_verdict(ranks[0][1], ranks=len(ranks))
            if ranks
            else Verdict(
                "warming-up", "info", "warming-up: no samples yet", {"source": "sampled"}, rule="warming-up"
            )
        )
    if len(usable) >= 2 and (straggler := _straggler(usable)) is not None:
        return straggler
    ordered = sorted(usable, key=lambda item: item[1].shares.input_share)
    return rank_sampled_verdict(ordered[len(ordered) // 2][1], ranks=len(usable))


@dataclass(frozen=True)
class JudgedWindow:
    """The last window that got a verdict, and when it was taken."""

    verdict: Verdict
    at: float


def keep_last_judged(
    current: Verdict, at: float, last: JudgedWindow | None
) -> tuple[Verdict, JudgedWindow | None]:
    """A window without a verdict (start-up, teardown, evaluation: warming-up) keeps the last judged
    window's verdict, labelled with its age and what the window now says, as an ended job keeps the
    verdict of its last live window. Returns the verdict to show and the new last judged window."""
    if current.kind != "warming-up":
        return current, JudgedWindow(current, at)
    if last is None:
        return current, None
    age_s = max(0.0, at - last.at)
    kept = last.verdict
    headline = f"{kept.headline}; last verdict, {age_s:.0f} s ago (now {current.headline})"
    evidence = {**kept.evidence, "kept_from_s_ago": round(age_s, 1)}
    return replace(kept, headline=headline, evidence=evidence), last


def gpu_busy_share(pid: int, window: StackWindow, gpu_states: Sequence[GpuState]) -> float | None:
    """NVML utilisation of the GPU that ``pid`` runs on, averaged over the readings taken during its
    window, where the process is that GPU's only user (as the live view's evidence takes it): None where
    no reading falls in the window, NVML lists the process on no GPU (no CUDA context yet, or another pid
    namespace), on several, or beside other processes."""
    end = window.started_at + window.duration_s + GPU_READING_SLACK_S
    busy: list[float] = []
    for state in gpu_states:
        if not window.started_at <= state.timestamp <= end:
            continue
        holding = [gpu for gpu in state.gpus if any(proc.pid == pid for proc in gpu.processes)]
        if not holding:
            continue
        if len(holding) > 1 or {proc.pid for proc in holding[0].processes} != {pid}:
            return None  # shared: the GPU's busy share is not this process's
        util = holding[0].util_gpu_percent
        if util is not None and not holding[0].lost_reason:
            busy.append(util / 100)
    return statistics.mean(busy) if busy else None


def judge_stacks(
    state: StacksState,
    line_text_for: Callable[[int], LineText | None] = lambda pid: None,
    gpu_states: Sequence[GpuState] = (),
) -> tuple[tuple[RankStacks, ...], Verdict]:
    """Every rank's window summary and the job's sampled verdict, from one StacksState and the GPU
    readings (GpuSource snapshots) taken while it was sampled."""
    by_pid = {target.pid: target for target in state.targets}
    found = []
    for w in state.windows:
        root = training_process(w)  # a launcher's child: its GPU share, and its stacks, are the job's
        found.append(
            summarise_window(w, line_text_for(w.root_pid), gpu_busy_share(root, w, gpu_states), root)
        )
    summaries = tuple(found)
    labelled = [(by_pid[s.pid].rank if s.pid in by_pid else None, s) for s in summaries]
    if state.error and not summaries:
        return summaries, Verdict("warming-up", "info", state.error, {"source": "sampled"}, rule="warming-up")
    return summaries, sampled_verdict(labelled)
