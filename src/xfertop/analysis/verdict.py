"""The plain verdict: why is this rank (or job) slow, how sure are we, and what to do about it.

``rank_verdict`` judges one rank's recent steps; ``job_verdict`` judges a job by the median of its
ranks and names a straggler when one rank's input wait stands out. Rules and thresholds are in
docs/verdicts.md; the numbers live in ``thresholds``.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from xfertop.analysis import advice as advise
from xfertop.analysis.advice import pct
from xfertop.analysis.evidence import Context
from xfertop.analysis.steps import IdleShares, Spread, WindowStats, usable_steps, window_stats
from xfertop.analysis.thresholds import (
    BETWEEN_CRITICAL_SHARE,
    BETWEEN_LEADS_SHARE,
    BETWEEN_NOTE_SHARE,
    CHECKPOINT_LEADS_LOOP_SHARE,
    CHECKPOINT_WARN_SHARE,
    COMPUTE_BOUND_SHARE,
    COPY_CRITICAL_SHARE,
    COPY_FLOOR_BYTES_PER_S,
    COPY_UNEXPLAINED_SLACK_SHARE,
    COPY_WARN_SHARE,
    EARLY_MIN_STEPS,
    HIDDEN_WAIT_MIN_SHARE,
    INPUT_CRITICAL_SHARE,
    INPUT_WARN_SHARE,
    LOOP_BLOCKED_SHARE,
    LOOP_PART_NAMED_SHARE,
    LOOP_WARN_SHARE,
    NESTED_PASS_WARN_SHARE,
    ONE_OFF_STALL_SHARE,
    PAGEABLE_H2D_LARGE_BYTES_PER_S,
    PAGEABLE_H2D_MAX_BYTES_PER_S,
    PAGEABLE_LARGE_STEP_BYTES,
    PREFETCHER_STARVED_SHARE,
    RX_COPY_BOUND_PAGEABLE_SHARE,
    STRAGGLER_CRITICAL_EXCESS_SHARE,
    STRAGGLER_VICTIM_COMPUTE_EXCESS_SHARE,
    STRAGGLER_WARN_EXCESS_SHARE,
    SYNC_GPU_BUSY_CRITICAL_SHARE,
    SYNC_GPU_BUSY_WARN_SHARE,
    SYNC_WAIT_WARN_SHARE,
    SYNCED_STEPS_FRACTION,
    WARMUP_STEPS,
    WINDOW_STEPS,
)
from xfertop.model.jobs import RankState, StepRecord

VerdictKind = Literal[
    "input-bound",
    "loop-bound",
    "copy-bound",
    "launch-bound",
    "compute-bound",
    "sync-bound",
    "host-bound",
    "straggler",
    "healthy",
    "warming-up",
]
#: "info" for verdicts that need no action (healthy, compute-bound, warming-up).
Severity = Literal["info", "warn", "critical"]
Evidence = Mapping[str, Any]


@dataclass(frozen=True)
class Verdict:
    kind: VerdictKind
    severity: Severity
    #: One line for the UI: "input-bound: the GPU sits idle 41% of each step waiting for data".
    headline: str
    #: Shares (fractions of step wall time), p50/p95 in ms, rates; what the verdict rests on.
    evidence: Evidence = field(default_factory=dict, hash=False)
    advice: tuple[str, ...] = ()
    #: The name of the rule that wrote it (docs/verdicts.md lists them in order): "" where none did.
    rule: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape used by `--once --json`, record files and the exporter."""
        return {
            "kind": self.kind,
            "severity": self.severity,
            "headline": self.headline,
            "evidence": dict(self.evidence),
            "advice": list(self.advice),
            "rule": self.rule,
        }


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def evidence_of(stats: WindowStats) -> dict[str, Any]:
    """The window's numbers, flat and JSON-ready: shares to 4 digits, milliseconds to 3."""
    evidence: dict[str, Any] = {
        "clock": stats.clock,
        "steps": stats.steps,
        "first_step": stats.first_step,
        "last_step": stats.last_step,
        "data_wait_share": _round(stats.data_wait_share, 4),
        "copy_share": _round(stats.copy_share, 4),
        "copy_cpu_share": _round(stats.copy_cpu_share, 4),
        "compute_share": _round(stats.compute_share, 4),
        "gpu_idle_share": _round(stats.gpu_idle_share, 4),
    }
    spreads: dict[str, Spread | None] = {
        "wall": stats.wall,
        "data_wait": stats.data_wait,
        "copy": stats.copy,
        "compute": stats.compute,
        "gpu_idle": stats.gpu_idle,
    }
    for name, spread in spreads.items():
        evidence[f"{name}_p50_ms"] = _round(spread.p50_ms if spread else None, 3)
        evidence[f"{name}_p95_ms"] = _round(spread.p95_ms if spread else None, 3)
    evidence.update(
        {
            "data_wait_max_ms": _round(stats.data_wait_max_ms, 3),
            "samples_per_s": _round(stats.samples_per_s, 2),
            "h2d_bytes_per_s": _round(stats.h2d_bytes_per_s, 0),
            "pinned_step_fraction": _round(stats.pinned_step_fraction, 4),
            "pageable_non_blocking_step_fraction": _round(stats.pageable_non_blocking_step_fraction, 4),
            "copied_step_fraction": _round(stats.copied_step_fraction, 4),
            "worker_start_steps": stats.worker_start_steps,
            "worker_start_wait_share": _round(stats.worker_start_wait_share, 4),
            "early": stats.early,
            "partitioned": stats.partitioned,
            "synced_step_fraction": _round(stats.synced_step_fraction, 4),
            "checkpoint_share": _round(stats.checkpoint_share, 4),
            "nested_pass_steps": stats.nested_pass_steps,
            "nested_pass_share": _round(stats.nested_pass_share, 4),
        }
    )
    for part, share in stats.host_parts.items():
        evidence[f"host_{part}_share"] = _round(share, 4)
    idle = stats.idle
    evidence["gpu_idle_in"] = (
        None
        if idle is None
        else {
            name: _round(getattr(idle, name), 4)
            for name in ("wait", "loop_pre", "copy", "loop_post", "model")
        }
    )
    return evidence


#: The step clock times next() on the thread that calls it. A job that reads its DataLoader on a thread of
#: its own (a prefetcher: a thread filling a queue.Queue that the loop takes batches from) has its steps
#: timed on that thread: their waits are the prefetcher's, which overlap the loop's compute, not the loop's.
#: They tell only whether the loader keeps up with the prefetcher (prefetcher_verdict, docs/reporter.md);
#: py-spy sees the training thread itself.
LOADER_OFF_THREAD = Verdict(
    kind="warming-up",
    severity="info",
    headline=(
        "not measured: the DataLoader is read on a background thread (a prefetcher of the job's own), so "
        "the step clock times that thread's waits, not the training loop's"
    ),
    evidence={"loader_off_thread": True},
    advice=(
        "`xfertop attach PID` (or `s` on the job's row) samples the training thread itself: it tells a loop "
        "that waits on the prefetcher's queue from one that computes.",
    ),
    rule="loader-off-thread",
)


def warming_up(usable: int, min_steps: int = EARLY_MIN_STEPS) -> Verdict:
    return Verdict(
        kind="warming-up",
        severity="info",
        headline=f"warming-up: {usable} of the {min_steps} steps a first verdict needs",
        evidence={"steps": usable, "min_steps": min_steps},
        rule="warming-up",
    )


def _severity(share: float, critical: float) -> Severity:
    return "critical" if share >= critical else "warn"


def judge(
    stats: WindowStats,
    *,
    dataloader_workers: int | None = None,
    gpu_busy_share: float | None = None,
    context: Context | None = None,
) -> Verdict:
    """Apply the rules to one window. ``gpu_busy_share`` (e.g. NVML utilisation as a fraction)
    overrides the busy share derived from the step clock, which cannot see host stalls inside a step.
    ``context``: what else is known of the rank (its GPU's link, its workers' cores, the host's memory);
    without it the window's own numbers are all there is."""
    return _marked_early(_judge(stats, dataloader_workers, gpu_busy_share, context or Context()), stats)


def _marked_early(verdict: Verdict, stats: WindowStats) -> Verdict:
    """The verdict, its headline saying so where it rests on an early window."""
    if not stats.early:
        return verdict
    head, sep, rest = verdict.headline.partition(":")
    if head.endswith(")"):  # "copy-bound (likely)": one parenthesis
        head = f"{head[:-1]}; early, {stats.steps} steps)"
    else:
        head = f"{head} (early, {stats.steps} steps)"
    headline = head + sep + rest
    # Its evidence says so too, whichever rule wrote it (an ended job's early verdict is judged again on
    # its ring: job_analysis.analyse_job).
    return replace(verdict, headline=headline, evidence={**verdict.evidence, "early": True})


def prefetcher_verdict(stats: WindowStats, workers: int | None, context: Context | None = None) -> Verdict:
    """A job that reads its DataLoader on a prefetch thread of its own: the step clock timed that thread,
    whose waits say whether the loader keeps up with it (PREFETCHER_STARVED_SHARE), not how the training
    loop spends its time. The loop's own parts stay unmeasured either way."""
    waiting = stats.data_wait_share
    evidence = {"loader_off_thread": True, "prefetcher_wait_share": _round(waiting, 4)}
    if waiting < PREFETCHER_STARVED_SHARE:
        headline = (
            f"{LOADER_OFF_THREAD.headline}; the DataLoader keeps up with that thread, which waits for it "
            f"{pct(waiting)} of its time"
        )
        return replace(LOADER_OFF_THREAD, headline=headline, evidence=evidence)
    headline = (
        f"input-bound: the job's prefetch thread waits for the DataLoader {pct(waiting)} of its time, so its "
        "queue stays empty and the training loop gets each batch only as the loader makes it"
    )
    if workers == 0:
        headline += " (num_workers=0)"
    advice = [
        *advise.input_bound_advice(stats, workers, context),
        "`xfertop attach PID` (or `s` on the job's row) measures how long the training loop itself waits "
        "on the prefetcher's queue.",
    ]
    evidence["dataloader_workers"] = workers
    verdict = Verdict("input-bound", "warn", headline, evidence, tuple(advice), "prefetcher-starved")
    return _marked_early(verdict, stats)


def without_one_off_stall(stats: WindowStats) -> tuple[WindowStats, str | None]:
    """The window judged without a one-off stall, and the line that says so; the window as it is where
    there is none. A stall is one step's wait (not an iteration's start) that makes the window read
    input-bound on its own (without it the wait is below INPUT_WARN_SHARE, and it holds at least
    ONE_OFF_STALL_SHARE of the wait) while no other step of the ring's history waited half as long: a
    slow sample, a storage or GC hiccup. A stall that recurs (a shard boundary every N steps) is the
    pipeline's own, and stays (the spikes advice names it). An early window (fewer than
    MIN_WINDOW_STEPS) is too short to tell: four workers on one core deliver four batches at once, then
    wait a second, so a 7-step window holds one such wait, and calling it a one-off read that job
    "compute-bound" until its second burst (tests/fixtures/windows/confined_workers_bursty_cpu.json)."""
    stall, wall_total = stats.stall_wait_ms, stats.wall_ms_total
    if stats.early or stats.sampled or stall <= 0 or stats.stall_repeats or wall_total <= stall:
        return stats, None
    wait_total = stats.data_wait_share * wall_total
    rest = wall_total - stall
    if stall < ONE_OFF_STALL_SHARE * wait_total or stats.input_share < INPUT_WARN_SHARE:
        return stats, None
    scale = wall_total / rest
    data_wait_share = max(0.0, wait_total - stall) / rest
    idle = stats.idle
    if idle is not None:  # the GPU idled at most as long as the loop waited
        idle = IdleShares(
            max(0.0, idle.wait * wall_total - stall) / rest,
            idle.loop_pre * scale,
            idle.copy * scale,
            idle.loop_post * scale,
            idle.model * scale,
        )
    if (idle.wait if idle is not None else data_wait_share) >= INPUT_WARN_SHARE:
        return stats, None
    without = replace(
        stats,
        wall_ms_total=rest,
        data_wait_share=data_wait_share,
        gpu_idle_share=idle.total if idle is not None else None,
        idle=idle,
        copy_share=stats.copy_share * scale,
        copy_cpu_share=stats.copy_cpu_share * scale,
        compute_share=min(1.0, stats.compute_share * scale),
        loop_pre_share=stats.loop_pre_share * scale,
        sync_share=stats.sync_share * scale,
        loop_post_share=stats.loop_post_share * scale,
        stall_wait_ms=0.0,
    )
    note = (
        f"One next() waited {stall:.0f} ms, {pct(stall / wall_total)} of this window, and no other step of "
        "the recent history half as long: a one-off (a slow sample, a storage or GC hiccup), left out of "
        "this verdict."
    )
    return without, note


@dataclass(frozen=True)
class Signals:
    """What the rules read, computed once per window. Shares are of the step's wall time.

    Where the GPU's idle gaps are measured, each cause's share is the GPU idle time that fell while the
    host did that (``WindowStats.idle``); without them (a CPU job, a GPU the reporter could not time) it
    is the host's own share of that part."""

    stats: WindowStats
    context: Context
    workers: int | None
    #: The GPU's busy share from NVML (the rank alone on its GPU); None: not measured.
    busy: float | None
    input: float
    loop_pre: float
    loop_post: float
    copy: float
    #: The GPU idle while the host was inside the model (dispatching kernels): known with ``busy``.
    dispatch: float
    #: The copy share the bytes moved can explain at the slowest pageable rate (a cross-check).
    copy_explained: bool
    #: The workers of the job's longest-iterated loader (its training loader) where the steps that waited
    #: came from another loader with a different count (``workers``): a validation pass, say.
    longest_loader_workers: int | None = None
    #: The part of ``input`` that is the loop's own code before the model, blocked off its CPU (a queue's
    #: get() for a producer's batches): moved from ``loop_pre`` (LOOP_BLOCKED_SHARE).
    input_in_loop: float = 0.0

    @property
    def on_gpu(self) -> bool:
        return self.context.on_gpu

    @property
    def loop(self) -> float:
        return self.loop_pre + self.loop_post

    def largest(self) -> str:
        """The cause that holds the most: input, loop, copy or dispatch."""
        causes = {"input": self.input, "loop": self.loop, "copy": self.copy, "dispatch": self.dispatch}
        return max(causes, key=lambda name: causes[name])


def signals(stats: WindowStats, workers: int | None, busy: float | None, context: Context) -> Signals:
    idle = stats.idle
    if idle is not None:
        input_share, pre, post, copy = idle.wait, idle.loop_pre, idle.loop_post, idle.copy
    else:
        input_share, pre, post = stats.data_wait_share, stats.loop_pre_share, stats.loop_post_share
        copy = stats.copy_share
        if busy is not None:
            # No idle gaps measured, but NVML says how long the GPU ran kernels: host time spent waiting
            # for data or in the loop's own work idled the GPU for at most the rest (queued work runs
            # meanwhile). A wait longer than that was hidden, not starvation (_hidden_wait).
            gpu_idle = max(0.0, 1.0 - busy)
            input_share, pre, post = min(input_share, gpu_idle), min(pre, gpu_idle), min(post, gpu_idle)
    dispatch = 0.0
    if busy is not None and context.on_gpu:
        measured = idle.total - idle.model if idle is not None else input_share + pre + post + copy
        unexplained = max(0.0, 1.0 - busy - measured)
        # NVML's busy counts kernels only, and the GPU clock counts a copy its stream ran as busy: kernel
        # idle time while the host sat in synchronous copy calls (pageable memory) is the copies', not the
        # model's dispatch. It is capped by both, so kernels that ran during the calls are not moved.
        in_copies = min(unexplained, max(0.0, stats.copy_share - copy))
        copy += in_copies
        unexplained -= in_copies
        # A pass over another loader inside a step (validation every N steps) idles the GPU after that
        # step's model; the gap of the step after it holds that idle, but one step in k is timed, and a
        # pass whose next step was not is in what NVML leaves unexplained: the pass's before the model's
        # dispatch, up to what it cost the host. Session 30's Lightning job (its validation loader's 2
        # workers starting at each pass: 31% of the time) read "launch-bound" without it. Where no gap is
        # measured at all, the host's shares already count the passes.
        untimed = 0.0
        if idle is not None and stats.nested_pass_steps:
            untimed = 1.0 - stats.nested_pass_timed_steps / stats.nested_pass_steps
        waits, work = stats.nested_pass_wait_share * untimed, stats.nested_pass_work_share * untimed
        if waits + work > 0:
            periodic = min(unexplained, waits + work)
            input_share += periodic * waits / (waits + work)
            post += periodic * work / (waits + work)
            unexplained -= periodic
        dispatch = unexplained
    elif idle is not None:
        dispatch = idle.model
    step_s = stats.wall_ms_total / max(stats.steps, 1) / 1000
    explained = stats.h2d_bytes_per_s * step_s / COPY_FLOOR_BYTES_PER_S / max(step_s, 1e-9)
    in_loop = 0.0
    blocked = context.loop_pre_blocked_share
    if blocked is not None and blocked >= LOOP_BLOCKED_SHARE:
        # The loop's code before the model mostly waits, blocked: for its batches, from a producer of its
        # own. That part of it is input; what ran on a CPU stays the loop's work.
        in_loop = pre * blocked
        pre -= in_loop
        input_share += in_loop
    return Signals(
        stats=stats,
        context=context,
        workers=workers,
        busy=busy,
        input=input_share,
        loop_pre=pre,
        loop_post=post,
        copy=copy,
        dispatch=dispatch,
        copy_explained=copy <= explained + COPY_UNEXPLAINED_SLACK_SHARE,
        input_in_loop=in_loop,
    )


RuleResult = tuple[Severity, str, list[str]]


@dataclass(frozen=True)
class Rule:
    """One named rule of the verdict: when it applies, and the headline and advice it writes."""

    name: str
    kind: VerdictKind
    applies: Callable[[Signals], bool]
    write: Callable[[Signals], RuleResult]


def _busy_text(sig: Signals) -> str:
    return f"the GPU is busy {pct(sig.busy)}" if sig.busy is not None else "GPU busy not measured"


def _input_applies(sig: Signals) -> bool:
    return sig.input >= INPUT_WARN_SHARE and sig.largest() == "input"


def _input_write(sig: Signals) -> RuleResult:
    if sig.input_in_loop >= sig.input / 2:
        return _own_producer_write(sig)
    if sig.stats.idle is not None:
        headline = f"input-bound: the GPU sits idle {pct(sig.input)} of each step waiting for data"
    else:
        headline = f"input-bound: {pct(sig.input)} of each step waits for the DataLoader"
    if sig.workers == 0:
        headline += " (num_workers=0)"
    in_passes = advise.passes_hold_the_wait(sig.stats)
    if in_passes:
        when = advise.passes_when(sig.stats)
        headline += f", mostly in passes over another DataLoader inside the training loop ({when})"
    severity = _severity(sig.input, INPUT_CRITICAL_SHARE)
    advice = advise.input_bound_advice(sig.stats, sig.workers, sig.context)
    if sig.longest_loader_workers is not None and sig.workers is not None and not in_passes:
        advice.insert(0, advise.another_loader_waits(sig.workers, sig.longest_loader_workers))
    if not in_passes:
        # Passes or checkpoints that cost the job apart from its wait (session 31's j76: validation at
        # the top of the body, 35% of the time) are named after the input's remedy.
        advice += advise.periodic_work_advice(sig.stats)
    return severity, headline, advice


def _own_producer_write(sig: Signals) -> RuleResult:
    """Most of the input is the loop's own code before the model, blocked: it waits for batches a
    producer of the job's own makes, not for a DataLoader."""
    blocked = sig.context.loop_pre_blocked_share or 0.0
    where = (
        f"the GPU sits idle {pct(sig.input)} of each step while the loop's own code before the model waits"
        if sig.stats.idle is not None
        else f"the loop's own code before the model waits {pct(sig.input)} of each step"
    )
    headline = f"input-bound: {where} for its batches, blocked off its CPU {pct(blocked)} of that code's time"
    if sig.busy is not None:
        headline += f" ({_busy_text(sig)})"
    advice = advise.own_producer_advice(_reads_a_loader(sig))
    return _severity(sig.input, INPUT_CRITICAL_SHARE), headline, advice


def _loop_applies(sig: Signals) -> bool:
    return sig.loop >= LOOP_WARN_SHARE and sig.largest() == "loop"


def _synced_after(sig: Signals) -> bool:
    """The loop's work after the step follows a sync in most steps, and the syncs wait long enough that
    dropping them would let queued GPU work run under that host work (see SYNC_WAIT_WARN_SHARE)."""
    stats = sig.stats
    return (
        sig.loop_post >= sig.loop_pre
        and stats.synced_step_fraction >= SYNCED_STEPS_FRACTION
        and stats.sync_share >= SYNC_WAIT_WARN_SHARE
    )


def _reads_a_loader(sig: Signals) -> bool:
    """The loop may read a DataLoader: the step clock saw one iterated (its workers are known), or the
    evidence cannot tell (Context.loader_unknown)."""
    return sig.workers is not None or sig.context.loader_unknown


def _where_loop(sig: Signals) -> str:
    return "before the model" if sig.loop_pre >= sig.loop_post else "after the step"


def _loop_write(sig: Signals) -> RuleResult:
    # The share said is the named part's own: both parts' sum only where both are named, each with its own.
    before = sig.loop_pre >= sig.loop_post
    other = sig.loop_post if before else sig.loop_pre
    both = other >= LOOP_PART_NAMED_SHARE
    said = sig.loop if both else max(sig.loop_pre, sig.loop_post)
    waits = f"the GPU sits idle {pct(said)} of each step" if sig.stats.idle is not None else ""
    holds = waits or f"it takes {pct(said)} of each step"
    advice = advise.loop_bound_advice(
        sig.loop_pre >= sig.loop_post,
        sig.on_gpu,
        _reads_a_loader(sig),
        sig.workers,
        uses_an_optimizer=sig.stats.optimizer_step_fraction > 0,  # accumulation steps it now and then
        post_blocked=sig.context.loop_post_blocked_share,
    )
    saving = sig.stats.checkpoint_share
    what = ""
    if saving >= CHECKPOINT_WARN_SHARE and saving >= CHECKPOINT_LEADS_LOOP_SHARE * sig.loop:
        # The loop's work is mostly torch.save every N steps: its remedy first, the bookkeeping's only
        # where the rest of the loop's work would still be named on its own.
        what = f"saving checkpoints: {pct(saving)} of the time"
        rest = advice if sig.loop - saving >= LOOP_WARN_SHARE else advice[-1:]
        advice = [*advise.checkpoint_advice(sig.stats), *rest]
    passes = sig.stats.nested_pass_share
    if not what and passes >= NESTED_PASS_WARN_SHARE and passes >= CHECKPOINT_LEADS_LOOP_SHARE * sig.loop:
        # A validation pass every N steps, inside the loop: its remedy (validate less often, on fewer
        # batches), not the per-step bookkeeping's, unless the rest of the loop's work would still hold.
        rest = advice if sig.loop - passes >= LOOP_WARN_SHARE else advice[-1:]
        advice = [*advise.nested_pass_advice(sig.stats), *rest]
        headline = (
            "loop-bound: passes over another DataLoader inside the training loop "
            f"({advise.passes_when(sig.stats)}) take {pct(passes)} of the time"
        )
    else:
        where = _where_loop(sig)
        if both:
            lead = max(sig.loop_pre, sig.loop_post)
            where = (
                f"{where} ({pct(lead)}{f'; {what}' if what else ''}) and "
                f"{'after the step' if before else 'before the model'} ({pct(other)})"
            )
        elif what:
            where = f"{where} ({what})"
        headline = f"loop-bound: the loop's own work {where} holds the step; {holds}"
    if sig.busy is not None:
        headline += f" ({_busy_text(sig)})"
    return _severity(sig.loop, INPUT_CRITICAL_SHARE), headline, advice


def _sync_write(sig: Signals) -> RuleResult:
    headline = (
        f"sync-bound: the loop syncs with the GPU every step, then works on the host while it idles "
        f"{pct(sig.loop)} of each step"
    )
    return _severity(sig.loop, INPUT_CRITICAL_SHARE), headline, advise.sync_then_host_work_advice()


def _copy_applies(sig: Signals) -> bool:
    return sig.copy >= COPY_WARN_SHARE and sig.largest() == "copy" and sig.copy_explained


def _copy_write(sig: Signals) -> RuleResult:
    source = ""
    if advise.asks_non_blocking_from_pageable(sig.stats):
        source = " (non_blocking from pageable memory: synchronous)"
    elif advise.is_pageable(sig.stats):
        source = " (pageable memory)"
    headline = f"copy-bound: host-to-device copies take {pct(sig.copy)} of each step{source}"
    return _severity(sig.copy, COPY_CRITICAL_SHARE), headline, advise.copy_bound_advice(sig.stats)


def _gpu_starved(sig: Signals) -> bool:
    return sig.on_gpu and sig.busy is not None and sig.busy < SYNC_GPU_BUSY_WARN_SHARE


def _untimed_copy(sig: Signals) -> dict[str, Any] | None:
    """NVML counts kernels only: a GPU busy copying reads idle. Its link may say so."""
    context, stats = sig.context, sig.stats
    rx_share, rx = context.rx_link_share, context.gpu_rx_bytes_per_s
    if not _gpu_starved(sig) or context.copies_measured or rx is None or rx_share is None:
        return None
    step_bytes = rx * stats.wall.p50_ms / 1000
    pageable_rate = (
        PAGEABLE_H2D_LARGE_BYTES_PER_S
        if step_bytes >= PAGEABLE_LARGE_STEP_BYTES
        else PAGEABLE_H2D_MAX_BYTES_PER_S
    )
    # The reporter's pinned host memory says whether a step's bytes can come from pinned buffers: if it
    # holds them, the link-speed figure is the estimate; if it cannot (known, smaller), they are
    # pageable; unknown, the pageable figure is only an upper bound.
    pinned = context.memory.pinned_bytes if context.memory is not None else None
    holds = pinned is not None and pinned >= step_bytes
    pageable_share = rx_share if holds else min(1.0, rx / pageable_rate)
    if rx_share < COPY_WARN_SHARE and pageable_share < RX_COPY_BOUND_PAGEABLE_SHARE:
        return None
    return {
        "rx": rx,
        "rx_share": rx_share,
        "pageable_share": pageable_share,
        "holds": holds,
        "severity_share": pageable_share if pinned is not None else rx_share,
    }


def _untimed_copy_write(sig: Signals) -> RuleResult:
    found = _untimed_copy(sig)
    assert found is not None and sig.busy is not None
    estimate = (
        "(its pinned host memory can hold a step's bytes)"
        if found["holds"]
        else f"{pct(found['pageable_share'])} if pageable"
    )
    headline = (
        f"copy-bound (likely): the GPU's link receives {found['rx'] / 1e9:.1f} GB/s, copies the "
        f"step clock did not time: {pct(found['rx_share'])} of each step at full link speed, "
        f"{estimate}; kernels run only {pct(sig.busy)}"
    )
    return _severity(found["severity_share"], COPY_CRITICAL_SHARE), headline, advise.untimed_copy_advice()


def _launch_applies(sig: Signals) -> bool:
    """Only where the host's step is partitioned (`xfertop run`): under watch() the host's "model" also
    holds the loop's own work and its syncs, which cannot be told from dispatch (host-bound names both)."""
    return (
        sig.stats.partitioned
        and _gpu_starved(sig)
        and sig.dispatch >= INPUT_WARN_SHARE
        and sig.largest() == "dispatch"
    )


def _cpu_optimizer_applies(sig: Signals) -> bool:
    """Where launch-bound would read the GPU's idle inside the model's step as the dispatch of small
    kernels, an optimizer that steps parameters held in host memory says it is the CPU's optimizer
    arithmetic (partitioned windows only, as launch-bound: under watch() the model's share also holds
    the loop's own work, and the GPU-starved rule speaks)."""
    return sig.context.cpu_optimizer and _launch_applies(sig)


def _cpu_optimizer_write(sig: Signals) -> RuleResult:
    assert sig.busy is not None
    headline = (
        f"host-bound: the GPU is busy only {pct(sig.busy)} of each step while the host is in the model's "
        f"step (idle {pct(sig.dispatch)} inside it): its optimizers step parameters held in host memory"
    )
    return _busy_severity(sig), headline, advise.cpu_optimizer_advice()


def _busy_severity(sig: Signals) -> Severity:
    return "critical" if sig.busy is not None and sig.busy < SYNC_GPU_BUSY_CRITICAL_SHARE else "warn"


def _launch_write(sig: Signals) -> RuleResult:
    assert sig.busy is not None
    headline = (
        f"launch-bound: the GPU is busy only {pct(sig.busy)} of each step while the host dispatches the "
        f"model (idle {pct(sig.dispatch)} inside it): many small kernels"
    )
    return _busy_severity(sig), headline, advise.launch_bound_advice()


def _host_write(sig: Signals) -> RuleResult:
    assert sig.busy is not None
    headline = (
        f"host-bound: the GPU is busy only {pct(sig.busy)} of each step yet never waits for data: the host "
        "holds it back"
    )
    return _busy_severity(sig), headline, advise.host_bound_advice()


def _hidden_wait(sig: Signals) -> bool:
    """A CPU wait that the GPU did not feel (measured idle gaps, or NVML's busy share) is not starvation."""
    stats = sig.stats
    return (
        (stats.idle is not None or sig.busy is not None)
        and sig.input < INPUT_WARN_SHARE
        and stats.data_wait_share >= HIDDEN_WAIT_MIN_SHARE
    )


def _not_starving(sig: Signals) -> str:
    if not _hidden_wait(sig):
        return ""
    return advise.hidden_wait_note(sig.stats.data_wait_share)


def host_compute_share(stats: WindowStats) -> float:
    """The host's model and sync share: compute on a CPU; on a GPU, host time that waits on the GPU's
    queue (compute-bound from the host's side where the GPU's busy share is not known)."""
    return min(1.0, stats.compute_share + stats.sync_share)


def _compute_share(sig: Signals) -> float:
    """GPU: its busy share where NVML has it (only a GPU job has one, sampled by attach too); else (CPU, or
    GPU busy not measured) host_compute_share."""
    if sig.busy is not None:
        return sig.busy
    return host_compute_share(sig.stats)


def _compute_applies(sig: Signals) -> bool:
    return _compute_share(sig) >= COMPUTE_BOUND_SHARE or _model_holds_a_busy_gpu(sig)


def _model_holds_a_busy_gpu(sig: Signals) -> bool:
    """The GPU is busy 70-90% (NVML) and the host's step is the model's (model + sync >= 90%): what idle
    the GPU has falls inside the model's own step (launch gaps between its kernels), not in anything the
    loop could hand elsewhere. That is the model's cost, not a healthy balance: the HF Trainer's BERT on
    the H200 read busy 84-94% poll by poll and flipped between the two
    (docs/measurements/h200-2026-12-04-s22)."""
    return (
        sig.busy is not None
        and sig.busy >= SYNC_GPU_BUSY_WARN_SHARE
        and host_compute_share(sig.stats) >= COMPUTE_BOUND_SHARE
    )


def _compute_write(sig: Signals) -> RuleResult:
    share = _compute_share(sig)
    if sig.busy is not None and share < COMPUTE_BOUND_SHARE:
        headline = (
            f"compute-bound: {_model_text(sig)} of each step, the GPU is busy {pct(share)} (its idle falls "
            f"inside the model){_not_starving(sig)}"
        )
    elif sig.busy is not None:
        headline = f"compute-bound: the GPU is busy {pct(share)} of each step{_not_starving(sig)}"
    elif sig.on_gpu:
        headline = f"compute-bound: {_model_text(sig)} of each step ({_busy_text(sig)}){_not_starving(sig)}"
    else:
        headline = f"compute-bound: compute is {pct(share)} of each step"
    advice = advise.compute_bound_advice(sig.stats, _hidden_wait(sig), sig.context, _reads_a_loader(sig))
    return "info", headline, advice


def _host_parts_shown(stats: WindowStats) -> dict[str, str]:
    """The host's step parts as shown (host_step_text): whole percentages that add up to 100."""
    host = stats.host_parts
    parts = {"data": host["wait"], "copy": host["copy"]}
    if stats.partitioned:
        parts |= {"loop": host["loop_pre"] + host["loop_post"], "model": host["model"]}
    else:
        parts["model and loop"] = host["model"] + host["loop_pre"] + host["loop_post"]
    parts["sync"] = host["sync"]
    return advise.parts_pct(parts)


def _model_text(sig: Signals) -> str:
    """The model's share of the host's step and the syncs' beside it, as host_step_text gives them:
    "the model takes 81% and the syncs 10%" (one sum of the two read "the model takes 91%" above a
    summary and a jobs row that gave the model 81%: session 33's clip + isfinite job)."""
    shown = _host_parts_shown(sig.stats)
    if "model" in shown:
        subject = f"the model takes {shown['model']}"
    else:  # the model's calls not seen (watch()): one part with the loop's own work
        subject = f"the model and the loop take {shown['model and loop']}"
    return subject if shown["sync"] == "0%" else f"{subject} and the syncs {shown['sync']}"


def host_step_text(stats: WindowStats, copies_measured: bool) -> str:
    """The host's step in its parts, on the host's clock alone, in whole percentages that add up to 100:
    "data 9%, loop 2%, copy 2%, model 42%, sync 45%". The model and the loop's own work are one part where
    the window is not partitioned (the model's calls were not seen), and the copy is inside them where
    copies are not measured."""
    shown = _host_parts_shown(stats)
    order = ("data", "loop", "copy", "model", "model and loop", "sync")
    return ", ".join(
        f"{name} {shown[name]}" if name != "copy" or copies_measured else "copy not measured"
        for name in order
        if name in shown
    )


def _healthy_write(sig: Signals) -> RuleResult:
    """The GPU's busy share and the host's parts as two labelled groups, each on its own clock: the GPU's
    idle shares beside the host's model share would add up to nothing (a GradScaler job read "data 2%,
    loop 3%, copy 3%, model 39% ..., the GPU is busy 81%", its 45% in the scaler's sync unnamed)."""
    stats = sig.stats
    host = host_step_text(stats, sig.context.copies_measured)
    if sig.busy is not None:
        headline = f"healthy: {_busy_text(sig)} of each step; the host's step: {host}"
    elif sig.on_gpu:
        headline = f"healthy: the host's step: {host} (GPU busy not measured)"
    else:
        headline = f"healthy: {host} of each step"
    return "info", headline + _not_starving(sig), advise.healthy_advice(stats, _hidden_wait(sig), sig.context)


#: The verdict's rules, in order: the first that applies writes the verdict (docs/verdicts.md).
RULES: tuple[Rule, ...] = (
    Rule("input-bound", "input-bound", _input_applies, _input_write),
    Rule("sync-then-host-work", "sync-bound", lambda s: _loop_applies(s) and _synced_after(s), _sync_write),
    Rule("loop-work", "loop-bound", _loop_applies, _loop_write),
    Rule("copy-bound", "copy-bound", _copy_applies, _copy_write),
    Rule("untimed-copies", "copy-bound", lambda s: _untimed_copy(s) is not None, _untimed_copy_write),
    Rule("cpu-optimizer", "host-bound", _cpu_optimizer_applies, _cpu_optimizer_write),
    Rule("launch-bound", "launch-bound", _launch_applies, _launch_write),
    Rule("gpu-starved", "host-bound", _gpu_starved, _host_write),
    Rule("compute-bound", "compute-bound", _compute_applies, _compute_write),
    Rule("healthy", "healthy", lambda s: True, _healthy_write),
)


def _judge(
    stats: WindowStats, dataloader_workers: int | None, gpu_busy_share: float | None, context: Context
) -> Verdict:
    stall_ms = stats.stall_wait_ms
    stats, one_off = without_one_off_stall(stats)
    if gpu_busy_share is None:
        gpu_busy_share = context.gpu_busy_share
    # The loader whose steps waited longest names the workers the advice is about; the ring's count is
    # the longest iteration's (the training loader's), which a slow validation pass need not share.
    ring_workers, waiting = dataloader_workers, stats.waiting_loader_workers
    dataloader_workers = waiting if waiting is not None else dataloader_workers
    sig = signals(stats, dataloader_workers, gpu_busy_share, context)
    if ring_workers is not None and dataloader_workers != ring_workers:
        sig = replace(sig, longest_loader_workers=ring_workers)
    evidence = evidence_of(stats)
    if one_off is not None:
        evidence["one_off_stall_ms"] = _round(stall_ms, 1)
    evidence["hidden_wait"] = _hidden_wait(sig)
    evidence["gpu_busy_share"] = _round(gpu_busy_share, 4)
    evidence["dataloader_workers"] = dataloader_workers
    evidence.update(context_evidence(context))
    memory_advice = advise.pinned_memory_advice(context.memory) + ([one_off] if one_off else [])
    between = stats.between_share
    evidence["between_share"] = _round(between, 4)
    if between >= BETWEEN_LEADS_SHARE:
        headline = (
            f"loop-bound: {pct(between)} of the time passes between the loader's iterations, where no "
            "step runs (the script's own code after each pass: evaluation, checkpoints, logging)"
        )
        advice = [advise.between_iterations_advice(between), *memory_advice]
        severity = _severity(between, BETWEEN_CRITICAL_SHARE)
        return Verdict("loop-bound", severity, headline, evidence, tuple(advice), "between-iterations")
    if between >= BETWEEN_NOTE_SHARE:
        memory_advice.insert(0, advise.between_iterations_advice(between))
    rule = next(rule for rule in RULES if rule.applies(sig))
    severity, headline, advice = rule.write(sig)
    if rule.kind in _ALSO_AFTER_KINDS:
        advice = [*advice, *_also_over_their_bars(sig, _OWN_CAUSE.get(rule.name))]
    if rule.name == "untimed-copies":
        found = _untimed_copy(sig)
        assert found is not None
        evidence["untimed_copy_share_range"] = [
            _round(found["rx_share"], 4),
            _round(found["pageable_share"], 4),
        ]
    return Verdict(rule.kind, severity, headline, evidence, tuple(advice + memory_advice), rule.name)


#: The verdicts after which another cause over its own bar is named (a headline names one cause, the
#: largest; a trial's job read loop-bound at 31% with its 18% wait for the DataLoader unsaid). Not after
#: healthy, host-bound or a straggler, whose advice already speaks of the step as a whole.
_ALSO_AFTER_KINDS = frozenset(
    {"input-bound", "loop-bound", "sync-bound", "copy-bound", "compute-bound", "launch-bound"}
)
#: The cause each rule's headline already names.
_OWN_CAUSE = {
    "input-bound": "input",
    "sync-then-host-work": "loop",
    "loop-work": "loop",
    "copy-bound": "copy",
    "untimed-copies": "copy",
}


def _also_over_their_bars(sig: Signals, own: str | None) -> list[str]:
    """One line for each cause besides the headline's that holds its own bar: what to look at next."""

    def line(share: float, on_the_host: str, idling: str) -> str:
        """``on_the_host``: what takes the share of the host's step; ``idling``: what the GPU idles in."""
        if sig.stats.idle is not None:
            return f"Next: the GPU also sits idle {pct(share)} of each step {idling}, over that bar too."
        return f"Next: {on_the_host} {pct(share)} of each step, over that bar too."

    lines = []
    if own != "input" and sig.input >= INPUT_WARN_SHARE:
        workers = " (num_workers=0)" if sig.workers == 0 else ""
        lines.append(line(sig.input, f"the wait for data{workers} takes", f"waiting for data{workers}"))
    if own != "loop" and sig.loop >= LOOP_WARN_SHARE:
        parts = f"(before the model {pct(sig.loop_pre)}, after the step {pct(sig.loop_post)})"
        lines.append(
            line(sig.loop, f"the loop's own work {parts} takes", f"through the loop's own work {parts}")
        )
    if own != "copy" and sig.copy >= COPY_WARN_SHARE and sig.copy_explained:
        lines.append(line(sig.copy, "host-to-device copies take", "through host-to-device copies"))
    return lines


def context_evidence(context: Context) -> dict[str, Any]:
    workers = context.workers
    cgroup = context.cgroup_cpu
    return {
        "copies_measured": context.copies_measured,
        "loop_pre_blocked_share": _round(context.loop_pre_blocked_share, 3),
        "loop_post_blocked_share": _round(context.loop_post_blocked_share, 3),
        "gpu_rx_bytes_per_s": _round(context.gpu_rx_bytes_per_s, 0),
        "rx_link_share": _round(context.rx_link_share, 4),
        "workers_found": workers.count if workers else None,
        "workers_allowed_cpus": list(workers.allowed_cpus) if workers else None,
        "workers_cpu_percent": _round(workers.cpu_percent, 1) if workers else None,
        "workers_run_delay_percent": _round(workers.run_delay_percent, 1) if workers else None,
        "workers_cores_busy_percent": _round(workers.allowed_cores_busy_percent, 1) if workers else None,
        "cpu_quota_cores": _round(cgroup.quota_cores, 2) if cgroup else None,
        "cpu_throttled_share": _round(cgroup.throttled_share, 4) if cgroup else None,
        "cpu_quota_used_share": _round(cgroup.used_share, 4) if cgroup else None,
        "pinned_host_share": _round(context.memory.pinned_share, 4) if context.memory else None,
    }


def rank_verdict(
    steps: Sequence[StepRecord],
    *,
    dataloader_workers: int | None = None,
    gpu_busy_share: float | None = None,
    window_steps: int = WINDOW_STEPS,
    warmup_steps: int = WARMUP_STEPS,
) -> Verdict:
    """The verdict on one rank's most recent steps (oldest first, as RankState.steps holds them)."""
    stats = window_or_early(steps, window_steps=window_steps, warmup_steps=warmup_steps)
    if stats is None:
        return warming_up(len(usable_steps(steps, warmup_steps)))
    return judge(stats, dataloader_workers=dataloader_workers, gpu_busy_share=gpu_busy_share)


def window_or_early(
    steps: Sequence[StepRecord], *, window_steps: int = WINDOW_STEPS, warmup_steps: int = WARMUP_STEPS
) -> WindowStats | None:
    """The window a verdict rests on: a full one (MIN_WINDOW_STEPS) when there is one, else an early
    one (EARLY_MIN_STEPS, marked ``early``), else None (warming up)."""
    stats = window_stats(steps, window_steps=window_steps, warmup_steps=warmup_steps)
    if stats is None:
        stats = window_stats(
            steps, window_steps=window_steps, warmup_steps=warmup_steps, min_steps=EARLY_MIN_STEPS
        )
    return stats


def _median_or_none(values: Sequence[Any]) -> Any:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


_IDLE_PARTS = ("wait", "loop_pre", "copy", "loop_post", "model")


def median_window(windows: Sequence[WindowStats]) -> WindowStats:
    """The typical rank: every number is the median across ranks (so one bad rank cannot hide or fake
    a job-wide bottleneck)."""
    if len(windows) == 1:  # one rank (the usual job): its own numbers, without a median of each
        only = windows[0]
        if only.clock == "cpu" or only.idle is None:
            return replace(only, gpu_idle_share=None, gpu_idle=None, idle=None)
        return only
    values: dict[str, Any] = {}
    for f in fields(WindowStats):
        column = [getattr(w, f.name) for w in windows]
        if f.name == "clock":
            values[f.name] = "gpu" if all(c == "gpu" for c in column) else "cpu"
        elif f.name in ("data_wait", "copy", "compute", "wall", "gpu_idle"):
            known = [s for s in column if s is not None]
            values[f.name] = (
                Spread(statistics.median(s.p50_ms for s in known), statistics.median(s.p95_ms for s in known))
                if known
                else None
            )
        elif f.name in ("steps", "first_step"):
            values[f.name] = min(column)
        elif f.name == "early":
            values[f.name] = any(column)
        elif f.name in ("partitioned", "sampled"):
            values[f.name] = all(column)
        elif f.name == "idle":
            known_idle = [i for i in column if i is not None]
            values[f.name] = (
                IdleShares(*(statistics.median(getattr(i, n) for i in known_idle) for n in _IDLE_PARTS))
                if known_idle and len(known_idle) == len(column)
                else None
            )
        elif f.name == "last_step":
            values[f.name] = max(column)
        elif f.name == "waiting_loader_workers":
            known_workers = [w for w in column if w is not None]
            values[f.name] = int(statistics.median_low(known_workers)) if known_workers else None
        else:
            values[f.name] = _median_or_none(column)
    if values["clock"] == "cpu" or values["idle"] is None:
        values["gpu_idle_share"], values["gpu_idle"], values["idle"] = None, None, None
    return WindowStats(**values)


def _rank_label(rank: RankState) -> str:
    return f"rank {rank.rank}" if rank.rank is not None else f"pid {rank.pid}"


def _step_ms(stats: WindowStats) -> float:
    return stats.wall_ms_total / max(stats.steps, 1)


def _straggler(judged: Sequence[tuple[RankState, WindowStats]]) -> Verdict | None:
    """One rank's input share far above the other ranks' while they spend at least a set share of its
    step doing more than it does outside its wait: they wait for it in their collectives.

    Compared in milliseconds of the step not lost to data (on the GPU's clock where it is measured: a
    host's wait may overlap queued GPU work), not by part: every rank runs the same model, and where a
    victim's wait for the straggler lands (the launch queue, an .item() sync, the all-reduce) depends on
    its loop. Ranks in lock step share the straggler's step time; independent ranks that are fed step
    faster and spend no more than it outside the wait."""
    input_shares = [stats.input_share for _, stats in judged]
    worst_index = max(range(len(judged)), key=lambda i: input_shares[i])
    worst_rank, worst = judged[worst_index]
    others = [s for i, (_, s) in enumerate(judged) if i != worst_index]
    median_input = statistics.median(s.input_share for s in others)
    excess = worst.input_share - median_input
    others_busy_ms = statistics.median(_step_ms(s) * (1 - s.input_share) for s in others)
    worst_busy_ms = _step_ms(worst) * (1 - worst.input_share)
    victim_excess = (others_busy_ms - worst_busy_ms) / max(_step_ms(worst), 1e-9)
    if excess < STRAGGLER_WARN_EXCESS_SHARE or victim_excess < STRAGGLER_VICTIM_COMPUTE_EXCESS_SHARE:
        return None
    label = _rank_label(worst_rank)
    waits = "sits idle waiting for data" if worst.gpu_idle_share is not None else "waits for data"
    headline = (
        f"straggler: {label} {waits} {pct(worst.input_share)} of each step (the others' median "
        f"{pct(median_input)}); the other ranks wait for it"
    )
    evidence = evidence_of(worst)
    evidence.update(
        {
            "ranks": len(judged),
            "straggler_rank": worst_rank.rank,
            "straggler_pid": worst_rank.pid,
            "straggler_input_share": round(worst.input_share, 4),
            "median_input_share": round(median_input, 4),
            "input_excess_share": round(excess, 4),
            "others_busy_ms": round(others_busy_ms, 3),
            "victim_compute_excess_share": round(victim_excess, 4),
        }
    )
    severity = _severity(excess, STRAGGLER_CRITICAL_EXCESS_SHARE)
    advice = tuple(advise.straggler_advice(worst_rank.rank))
    return Verdict("straggler", severity, headline, evidence, advice, "straggler")


def job_verdict(
    ranks: Sequence[RankState],
    gpu_busy_share_by_pid: Mapping[int, float] | None = None,
    *,
    stats_by_rank: Mapping[str, WindowStats | None] | None = None,
    contexts: Mapping[str, Context] | None = None,
) -> Verdict:
    """The verdict on a job: a straggler if one rank holds the others back, else the rules applied to
    the median rank. Ranks still warming up are left out until they have a window (early or full).

    ``gpu_busy_share_by_pid``: each rank's GPU busy fraction from outside the step clock (NVML
    utilisation of its GPU, where the rank is that GPU's only user); the median feeds the sync rule.
    ``stats_by_rank``: each rank's window where the caller has it (``window_or_early``); ``contexts``:
    what else is known of each rank (``analysis.evidence.rank_context``). Both are keyed by the rank's
    ring path: ranks of different hosts may share a pid (containers), never a ring. A debugging switch a
    rank runs with (anomaly detection, a profiler ...: RankState.debug_switches) and a busy Python thread
    beside its loop (RankState.busy_thread) are the first advice of any verdict, since they slow every
    step whatever holds the step."""
    verdict = _job_verdict(ranks, gpu_busy_share_by_pid, stats_by_rank, contexts)
    switches = sorted({name for rank in ranks for name in rank.debug_switches})
    advice = advise.debug_switch_advice(switches, any(rank.device.startswith("cuda") for rank in ranks))
    evidence = {**verdict.evidence, "debug_switches": switches} if switches else dict(verdict.evidence)
    busy = max(ranks, key=lambda rank: rank.busy_thread_share, default=None)
    if busy is not None and busy.busy_thread:
        advice.append(advise.busy_thread_advice(busy.busy_thread, busy.busy_thread_share))
        evidence["busy_thread"] = busy.busy_thread
        evidence["busy_thread_share"] = _round(busy.busy_thread_share, 3)
    if not advice:
        return verdict
    return replace(verdict, advice=(*advice, *verdict.advice), evidence=evidence)


def _job_verdict(
    ranks: Sequence[RankState],
    gpu_busy_share_by_pid: Mapping[int, float] | None,
    stats_by_rank: Mapping[str, WindowStats | None] | None,
    contexts: Mapping[str, Context] | None,
) -> Verdict:
    def stats_of(rank: RankState) -> WindowStats | None:
        if stats_by_rank is not None and rank.ring_path in stats_by_rank:
            return stats_by_rank[rank.ring_path]
        return window_or_early(rank.steps)

    judged = [(rank, stats) for rank in ranks if (stats := stats_of(rank)) is not None]
    if not judged:
        return warming_up(max((len(usable_steps(r.steps)) for r in ranks), default=0))
    workers = _median_or_none([rank.dataloader_workers for rank, _ in judged])
    by_rank = contexts or {}
    typical_context = _job_context([by_rank.get(rank.ring_path) for rank, _ in judged])
    if prefetched := [stats for rank, stats in judged if rank.loader_off_thread]:
        return prefetcher_verdict(
            median_window(prefetched), None if workers is None else int(workers), typical_context
        )
    full = [(rank, stats) for rank, stats in judged if not stats.early]
    if len(full) >= 2 and (straggler := _straggler(full)) is not None:
        return straggler
    typical = median_window([stats for _, stats in judged])
    busy = _median_or_none(
        [
            (gpu_busy_share_by_pid or {}).get(rank.pid)
            if rank.ring_path not in by_rank or by_rank[rank.ring_path].gpu_busy_share is None
            else by_rank[rank.ring_path].gpu_busy_share
            for rank, _ in judged
        ]
    )
    verdict = judge(
        typical,
        dataloader_workers=None if workers is None else int(workers),
        gpu_busy_share=busy,
        context=typical_context,
    )
    return replace(verdict, evidence={**verdict.evidence, "ranks": len(judged)})


def _job_context(contexts: Sequence[Context | None]) -> Context | None:
    """One rank's context as it is; for several, the typical one: medians of the GPU figures, copies
    measured only if measured on every rank, the first rank's workers."""
    known = [c for c in contexts if c is not None]
    if not known:
        return None
    if len(known) == 1:
        return known[0]
    return Context(
        on_gpu=any(c.on_gpu for c in known),
        copies_measured=all(c.copies_measured for c in known),
        gpu_busy_share=_median_or_none([c.gpu_busy_share for c in known]),
        gpu_rx_bytes_per_s=_median_or_none([c.gpu_rx_bytes_per_s for c in known]),
        link_bytes_per_s=_median_or_none([c.link_bytes_per_s for c in known]),
        workers=known[0].workers,
        memory=known[0].memory,
        stepping=any(c.stepping for c in known),
        cpu_optimizer=any(c.cpu_optimizer for c in known),
    )
