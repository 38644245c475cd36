"""Concrete next steps for each verdict, as sentences a person can act on.

Sources for the advice: the PyTorch Tuning Guide and data-loading tutorial (num_workers, pin_memory,
non_blocking, persistent_workers, prefetch_factor), and GPU-FACTS.md (pinned copies ~8x faster than
pageable ones on an H200; non_blocking from pageable memory is synchronous).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from xfertop.analysis.evidence import CgroupCpuEvidence, Context, MemoryEvidence, WorkersEvidence
from xfertop.analysis.placement import cpu_ranges
from xfertop.analysis.steps import WindowStats
from xfertop.analysis.thresholds import (
    BURSTY_MAX_MEDIAN_WAIT_SHARE,
    BURSTY_P95_OVER_P50,
    CHECKPOINT_WARN_SHARE,
    CORES_SATURATED_PERCENT,
    CPU_JOB_FEW_CORES,
    H2D_SEEN_OF_RX_MIN,
    INPUT_WARN_SHARE,
    LOOP_BLOCKED_SHARE,
    MAIN_BUSY_IN_WAIT_SHARE,
    NESTED_PASS_WARN_SHARE,
    NEW_ITERATOR_MIN_STEPS,
    NEW_ITERATOR_STEP_SHARE,
    OVERSUBSCRIBED_BUSY_PERCENT,
    PCIE_IRRELEVANT_COPY_SHARE,
    PINNED_MIN_STEP_FRACTION,
    RESTARTS_FIRST_SHARE,
    RX_CROSS_CHECK_MIN_BYTES_PER_S,
    SPIKE_MIN_WAIT_FRACTION,
    TINY_BATCH_MAX_SAMPLES,
    TINY_BATCH_MAX_WAIT_MS,
    WAITING_WORKERS_CPU_SHARE,
    WORKER_START_WAIT_SHARE,
    WORKERS_BESIDE_THREADS_PERCENT,
)


def pct(share: float) -> str:
    """A share as a whole percentage; "<1%" rather than a misleading "0%" for small non-zero shares."""
    if 0 < share < 0.005:
        return "<1%"
    return f"{share * 100:.0f}%"


def largest_remainder(exact: Sequence[float], total: int) -> list[int]:
    """``exact`` (non-negative) as whole numbers that add up to ``total`` where they can: each rounded
    down, then one more for the largest remainders (ties in order) until ``total``. Rounded one by one,
    9.5 + 42.5 + 48 would read 10 + 43 + 48 = 101. Percentages (parts_pct) and a bar's cells (the UI's
    chart.stacked) both."""
    whole = [int(value) for value in exact]
    by_remainder = sorted(range(len(exact)), key=lambda i: exact[i] - whole[i], reverse=True)
    for index in by_remainder[: max(0, total - sum(whole))]:
        whole[index] += 1
    return whole


def parts_pct(shares: Mapping[str, float]) -> dict[str, str]:
    """Shares that make up a whole, as whole percentages that add up to 100 (largest_remainder), "<1%"
    for a non-zero share rounded away."""
    total = sum(shares.values())
    scale = 100 / total if total > 0 else 0.0
    exact = [share * scale for share in shares.values()]
    whole = largest_remainder(exact, round(sum(exact)))
    return {
        name: "<1%" if not percent and share > 0 else f"{percent}%"
        for (name, share), percent in zip(shares.items(), whole, strict=True)
    }


def hidden_wait_note(wait_share: float) -> str:
    """The headline's note on a DataLoader wait the GPU did not feel (verdict._hidden_wait)."""
    return f"; its {pct(wait_share)} DataLoader wait is hidden by queued GPU work: not starving"


def is_bursty(stats: WindowStats) -> bool:
    """A few long waits among short ones: a deeper prefetch queue would absorb them. Only where the
    typical step hardly waits (the workers keep up on average): workers that are too slow wait every
    step, in a long-short rhythm as each delivers in turn, and a deeper queue cannot fill faster than
    they produce."""
    wait = stats.data_wait
    if stats.wall.p50_ms > 0 and wait.p50_ms > BURSTY_MAX_MEDIAN_WAIT_SHARE * stats.wall.p50_ms:
        return False
    return wait.p95_ms > 0 and wait.p95_ms >= BURSTY_P95_OVER_P50 * max(wait.p50_ms, 0.01)


def has_spikes(stats: WindowStats) -> bool:
    """Most of the wait sits in a handful of steps (the epoch-start pattern)."""
    return stats.data_wait_top_share >= SPIKE_MIN_WAIT_FRACTION


def is_pageable(stats: WindowStats) -> bool:
    return stats.pinned_step_fraction is not None and stats.pinned_step_fraction < PINNED_MIN_STEP_FRACTION


def asks_non_blocking_from_pageable(stats: WindowStats) -> bool:
    fraction = stats.pageable_non_blocking_step_fraction
    return fraction is not None and fraction > 0


def do_not_tune_pcie(stats: WindowStats, context: Context | None = None) -> list[str]:
    """Only where there is a link (a GPU job) and copies were measured: a 0% nobody measured is no fact."""
    context = context or Context()
    if not context.on_gpu or stats.copy_share >= PCIE_IRRELEVANT_COPY_SHARE:
        return []
    if not context.copies_measured:
        return cross_check_advice(stats, context)
    return [
        f"Do not tune PCIe: host-to-device copies are only {pct(stats.copy_share)} of each step.",
        *cross_check_advice(stats, context),
    ]


def cross_check_advice(stats: WindowStats, context: Context) -> list[str]:
    """The step clock's host-to-device bytes against what the rank's GPU received (its only user)."""
    rx = context.gpu_rx_bytes_per_s
    if rx is None or rx < RX_CROSS_CHECK_MIN_BYTES_PER_S or stats.h2d_bytes_per_s >= H2D_SEEN_OF_RX_MIN * rx:
        return []
    seen = stats.h2d_bytes_per_s / 1e9
    return [
        f"The GPU's link receives {rx / 1e9:.1f} GB/s but the step clock saw copies of only "
        f"{seen:.1f} GB/s: copies made where it does not look (a framework's own copy, another "
        "stream) are not in the copy share; `xfertop run` times Tensor.to/.cuda."
    ]


def _cores_text(cores: float) -> str:
    """A number of cores as a person writes it: "2 cores", "0.5 cores", "1 core"."""
    text = f"{cores:.2f}".rstrip("0").rstrip(".")
    return f"{text} core{'' if text == '1' else 's'}"


def _quota_source(quota_file: str | None) -> str:
    """Where the quota comes from, as the advice names it: "cgroup cpu.max"."""
    name = quota_file.rsplit("/", 1)[-1] if quota_file else ""
    return f"cgroup {name}" if name else "cgroup"


def _throttled_text(workers: WorkersEvidence) -> str:
    """The throttling as the advice words it (throttled in 40% of periods), with how much of the quota
    was used where that is known."""
    share = workers.cpu_throttled_share
    if share is None:
        return ""
    used = workers.cpu_quota_used_share
    if used is None:
        return f"throttled in {pct(share)} of periods"
    if workers.throttled_in_bursts:
        return f"throttled in {pct(share)} of periods in bursts, {pct(used)} of it used on average"
    return f"throttled in {pct(share)} of periods, {pct(used)} of it used"


def _cheaper_samples(on_gpu: bool) -> str:
    """How to make each sample cheaper, in parentheses: what any Dataset can do, and on a GPU job the
    augmentation moved after the copy (a CPU job has no GPU to move it to)."""
    gpu = "; augmentation moved onto the GPU after the copy" if on_gpu else ""
    return f"(less decoding, parsing or augmentation per sample; data kept decoded in memory{gpu})"


def _no_workers_advice(context: Context) -> str:
    """num_workers=0: how many workers to try. A CPU job's workers run on the cores its model's threads
    use (torch takes one per core): on a few cores, raising num_workers alone oversubscribes them (a
    trial's text job on 2 cores: 0, 1 and 2 workers ran 28.8, 32.8 and 27.0-31.3 s), and on one core no
    worker can load beside the model."""
    loaded = "num_workers=0: every batch is loaded and decoded inside the training loop. "
    cores = context.cores_allowed
    if context.on_gpu or cores is None or cores > CPU_JOB_FEW_CORES:
        per_gpu = " per GPU" if context.on_gpu else ""  # a CPU job has none to count by
        return loaded + f"Set num_workers to 2-4{per_gpu} and raise it until samples/s stops improving."
    if cores == 1:
        return loaded + (
            "This process may run on 1 core only, which workers would share with the model: they cannot "
            f"load beside it. Make each sample cheaper {_cheaper_samples(False)}, or give the job more cores."
        )
    return loaded + (
        f"On a CPU job the workers share this process's {cores} cores with the model's threads: try "
        f"num_workers=1{f'-{cores - 1}' if cores > 2 else ''} with torch.set_num_threads({cores} - "
        "num_workers) for the model, and keep what gives the most samples/s (either raised alone "
        "oversubscribes the cores)."
    )


def workers_mostly_wait(workers: WorkersEvidence, count: int) -> bool:
    """Most of the workers' time goes to waiting on something other than a core (storage, a network, a
    sleep), and more of them overlap more of those waits, however busy the cores are. Where the scheduler's
    run delay is known: they were ready to run (on a CPU, or waiting for one) under
    WAITING_WORKERS_CPU_SHARE of their time. Else from their CPU alone: under that share of what their
    cores could give them (the allowed cores, or the quota, over the processes that want them), which
    takes the training process for the cores' only other user: a machine loaded by other jobs gives
    CPU-bound workers less, and they read as waiting (session 48's CI: 3 workers confined to one core of a
    loaded 2-core box used 31% of it). Unknown CPU use: not known to wait."""
    used = workers.cpu_percent
    if used is None or count <= 0:
        return False
    if workers.run_delay_percent is not None:
        return used + workers.run_delay_percent < WAITING_WORKERS_CPU_SHARE * 100.0 * count
    could_get = 100.0 * min(count, count * workers.effective_cores / workers.competing(count))
    return used < WAITING_WORKERS_CPU_SHARE * could_get


def main_process_busy_in_wait(workers: WorkersEvidence, input_share: float) -> float | None:
    """The share of the step, at least, in which the training process's main thread ran on its CPU while
    the loop waited for the loader (``input_share`` of the step): its CPU, less all of the step outside the
    wait. None where its CPU is unknown."""
    main = workers.main_thread_cpu_percent
    if main is None:
        return None
    return max(0.0, min(input_share, main / 100.0 - (1.0 - input_share)))


def main_process_loads(workers: WorkersEvidence, count: int, input_share: float) -> bool:
    """The workers mostly wait while the loop waits for them, and the main thread works through most of
    that wait: the main process does the loader's work (MAIN_BUSY_IN_WAIT_SHARE)."""
    busy = main_process_busy_in_wait(workers, input_share)
    return (
        busy is not None
        and input_share > 0
        and busy >= MAIN_BUSY_IN_WAIT_SHARE * input_share
        and workers_mostly_wait(workers, count)
    )


def _main_process_loads_advice(workers: WorkersEvidence, input_share: float) -> str:
    busy = main_process_busy_in_wait(workers, input_share) or 0.0
    return (
        f"The main process does the loader's work itself: its main thread ran on its CPU through at least "
        f"{pct(busy)} of each step while the loop waited {pct(input_share)} for batches, and the "
        f"{workers.count} workers use {workers.cpu_percent or 0:.0f}% of a core between them. What runs "
        "there is the Sampler drawing each index (a custom Sampler's Python), unpacking the workers' "
        "batches, or an iterator of the job's own around the loader: more workers cannot help. Make the "
        "sampler cheap (precompute the indices once per epoch), send fewer, larger tensors per batch; "
        "`xfertop attach PID` (or `s` on the job's row) names the lines."
    )


def _more_workers(dataloader_workers: int | None, workers: WorkersEvidence | None) -> str:
    cores = ""
    if workers is not None and workers.quota_below_cores and workers.cpu_quota_cores is not None:
        # The quota, not the affinity, bounds the CPU the workers get: name it.
        throttled = _throttled_text(workers)
        quota = _cores_text(workers.cpu_quota_cores)
        cores = f" (a CPU quota of {quota}, {_quota_source(workers.cpu_quota_file)}" + (
            f", {throttled})" if throttled else ")"
        )
    elif workers is not None:
        busy = workers.allowed_cores_busy_percent
        count = len(workers.allowed_cpus)
        cores = f" ({count} core{'s' if count != 1 else ''} allowed" + (
            f", {busy:.0f}% busy)" if busy is not None else ")"
        )
    waiting = ""
    if workers is not None and dataloader_workers and workers_mostly_wait(workers, dataloader_workers):
        waiting = (
            f" Between them the workers use {workers.cpu_percent or 0:.0f}% of a core: they mostly wait "
            "(storage, a network, a sleep), and more of them overlap more of those waits."
        )
    if dataloader_workers is not None:
        return (
            f"Raise num_workers above {dataloader_workers}{cores} until samples/s stops improving; past "
            f"the core count or the storage's limit more workers make it worse.{waiting}"
        )
    return (
        "Raise num_workers (start at 2-4 per GPU) until samples/s stops improving, and keep decoding "
        "out of the main process."
    )


def _unseen_workers(dataloader_workers: int, on_gpu: bool) -> str:
    """A job that stopped stepping before its workers' cores were seen: whether more workers can help
    is not known (_what_limits_workers needs their cores' load), so both remedies, hedged."""
    return (
        f"More than {dataloader_workers} worker{'s' if dataloader_workers != 1 else ''} may help if their "
        "cores have room: the job stopped before "
        "xfertop saw where its workers run and how busy those cores are (the live view shows it while a "
        f"job runs). If the cores are busy, make each sample cheaper {_cheaper_samples(on_gpu)}."
    )


#: What raises a job's CPU quota, by who set it.
_RAISE_QUOTA = "docker --cpus, the pod's limits.cpu, systemd CPUQuota="


def _what_limits_workers(workers: WorkersEvidence, count: int) -> str | None:
    """Why more workers cannot help, or None where they may: "quota" (their cgroup is throttled, or its
    quota is below their count and whether it is used up is not known yet), "affinity" (they, with their
    training process where it shares their cores, outnumber their allowed cores, fewer than the
    machine's, and those are in use, or their load is unknown),
    "cores" (the same, allowed every core of the machine: not confined) or "busy" (their cores are
    saturated). Workers waiting on storage (network file systems, object stores) can outnumber their
    cores, or their quota, and still gain from more: an idle core or an unthrottled cgroup says so, and
    so does their own CPU use, well under what their cores could give them, where the training
    process's threads keep those cores busy (workers_mostly_wait: the cores' other users are taken to
    be the training process alone; a machine loaded by other jobs gives CPU-bound workers less than
    that, and may read them as waiting)."""
    quota = workers.cpu_quota_cores
    if workers.throttled or (
        workers.quota_below_cores
        and quota is not None
        and count > quota
        and workers.cpu_throttled_share is None
    ):
        return "quota"
    if workers_mostly_wait(workers, count):
        return None  # not their CPU: however busy the cores, more workers overlap more waits
    busy = workers.allowed_cores_busy_percent
    competing = workers.competing(count)  # the training process runs there too: it is no idle core
    if competing > len(workers.allowed_cpus) and (busy is None or busy >= OVERSUBSCRIBED_BUSY_PERCENT):
        # Allowed every core of the machine, they are not confined: they outnumber its cores.
        return "affinity" if workers.confined else "cores"
    return "busy" if workers.saturated else None


def _quota_cannot_help(workers: WorkersEvidence, count: int, on_gpu: bool) -> str:
    quota = f" of {_cores_text(workers.cpu_quota_cores)}" if workers.cpu_quota_cores is not None else ""
    source = _quota_source(workers.cpu_quota_file)
    throttled = _throttled_text(workers)
    if workers.cpu_quota_cores is not None and count > workers.cpu_quota_cores:
        return (
            f"The {count} DataLoader workers share a CPU quota{quota} ({source}) with their training "
            f"process{f', and the job was {throttled}' if throttled else ''}: more workers cannot help. "
            f"Raise the job's CPU limit ({_RAISE_QUOTA}) or size num_workers to it."
        )
    return (
        f"The job uses all of its CPU quota{quota} ({source}): it was {throttled}, so more "
        f"workers cannot help. Raise the job's CPU limit ({_RAISE_QUOTA}) or make each sample cheaper "
        f"{_cheaper_samples(on_gpu)}."
    )


def _no_workers_on_a_used_up_quota(cpu: CgroupCpuEvidence, on_gpu: bool) -> list[str]:
    """num_workers=0 in a throttled cgroup: workers would share the quota the loop already uses up."""
    source = _quota_source(cpu.quota_file)
    return [
        "num_workers=0: every batch is loaded and decoded inside the training loop, and the job uses all "
        f"of its CPU quota of {_cores_text(cpu.quota_cores)} ({source}): it was throttled in "
        f"{pct(cpu.throttled_share or 0.0)} of periods. Workers would share that quota: raise the job's CPU "
        f"limit ({_RAISE_QUOTA}), then set num_workers to the cores it gives.",
        f"Or make each sample cheaper {_cheaper_samples(on_gpu)}.",
    ]


def _workers_cannot_help(workers: WorkersEvidence, count: int, limit: str, on_gpu: bool) -> list[str]:
    """More workers cannot help: ``limit`` (from _what_limits_workers) says what holds them."""
    if limit == "quota":
        return [_quota_cannot_help(workers, count, on_gpu)]
    cpus = cpu_ranges(list(workers.allowed_cpus))
    who = f"The {count} DataLoader workers"
    if count <= len(workers.allowed_cpus):  # their training process on the same cores tips it
        who = f"The {count} DataLoader worker{'s' if count != 1 else ''} and their training process"
    if limit == "affinity":
        return [
            f"{who} may run on only {len(workers.allowed_cpus)} "
            f"core{'s' if len(workers.allowed_cpus) != 1 else ''} (CPU affinity {cpus}): more workers "
            "cannot help. Give them more cores: widen the affinity (taskset, numactl, a worker_init_fn "
            "that pins them, the job's cpuset), then size num_workers to the cores."
        ]
    busy = workers.allowed_cores_busy_percent or 0.0
    if limit == "cores":
        cores = len(workers.allowed_cpus)
        return [
            f"{who} already outnumber this machine's {cores} "
            f"core{'s' if cores != 1 else ''}, {busy:.0f}% busy: more workers cannot help. Make each "
            f"sample cheaper {_cheaper_samples(on_gpu)} or run on more cores."
        ]
    return [
        f"The cores the workers may use ({cpus}) are {busy:.0f}% busy: more workers cannot help. "
        f"Make each sample cheaper {_cheaper_samples(on_gpu)} or give the job more cores."
    ]


def between_iterations_advice(share: float, name_it: bool = True) -> str:
    """``name_it``: say that attach names the function (not where attach is the one advising)."""
    named = "; `xfertop attach PID` while it runs names the function" if name_it else ""
    return (
        f"{pct(share)} of the time no step runs: it passes between the loader's iterations, in the "
        "script's own code after each pass (evaluation, checkpoints, uploads, logging), with the GPU idle. "
        "Evaluate less often or on fewer batches, save and upload checkpoints off the loop (a background "
        f"thread, torch.distributed.checkpoint.async_save){named}."
    )


def another_loader_waits(workers: int, longest_loader_workers: int) -> str:
    """Which loader the input advice is about, where the steps that wait are not the training loader's."""
    return (
        f"The steps that wait come from a loader with num_workers={workers}, not from the one iterated "
        f"longest (num_workers={longest_loader_workers}, most likely the training loader): a validation "
        "or second loader. The advice below is for that loader."
    )


def passes_when(stats: WindowStats) -> str:
    """How often the window's passes over another loader came: "validation, about every 50 steps"; a
    window with one pass says no period ("validation, one in the window's 26 steps": a live verdict
    judged early in a short job)."""
    if stats.nested_pass_steps < 2:
        return f"validation, one in the window's {stats.steps} steps"
    return f"validation, about every {stats.nested_pass_period} steps"


def wait_mostly_in_passes(pass_wait_share: float, wait_share: float) -> bool:
    """Passes over another loader inside the training loop wait ``pass_wait_share`` of the time, enough to
    name and at least half of the whole ``wait_share``: the step clock's and attach's one bar."""
    return pass_wait_share >= NESTED_PASS_WARN_SHARE and pass_wait_share * 2 >= wait_share


def passes_hold_the_wait(stats: WindowStats) -> bool:
    """Most of the window's DataLoader wait falls in passes over another loader inside the training loop
    (a validation pass every N steps over a slow loader), beyond what a typical step waits."""
    return bool(stats.nested_pass_steps) and wait_mostly_in_passes(
        stats.nested_pass_wait_share, stats.data_wait_share
    )


def nested_pass_wait_advice(stats: WindowStats, workers: int | None) -> str:
    """The input advice's first line where passes_hold_the_wait: which loader waits, and the passes' own
    remedy; ``workers``: that loader's num_workers (the loader whose steps waited longest)."""
    loader = f"; its loader has num_workers={workers}" if workers is not None else ""
    return (
        "Most of the wait is in passes over another DataLoader inside the training loop "
        f"({passes_when(stats)}{loader}): they wait {pct(stats.nested_pass_wait_share)} of "
        "the time beyond a typical step. The advice below is for that loader; validating less often or on "
        "fewer batches (eval_steps, val_check_interval, limit_val_batches) cuts the wait too."
    )


def input_bound_advice(
    stats: WindowStats, dataloader_workers: int | None, context: Context | None = None
) -> list[str]:
    """``dataloader_workers``: the num_workers of the loader whose steps waited longest."""
    context = context or Context()
    in_passes = passes_hold_the_wait(stats)
    advice: list[str] = [nested_pass_wait_advice(stats, dataloader_workers)] if in_passes else []
    # Steps that wait far longer than the rest: the passes, where they hold the wait (named above).
    spikes = has_spikes(stats) and not in_passes
    restarts = restarts_workers(stats)
    if new_iterator_every_step(stats):
        # Neither persistent workers nor more of them: each step asks a new iterator for its first batch.
        seen = (
            f"{stats.iteration_start_steps} of the window's {stats.steps} steps each begin a new iteration "
            "over the DataLoader."
        )
        return [new_iterator_advice(seen, bool(stats.worker_start_steps))]
    if restarts and stats.sampled:
        advice.append(sampled_restarts_advice(stats))
    elif restarts:
        advice.append(
            f"{pct(stats.worker_start_wait_share)} of the wait falls in the first step of each "
            f"epoch ({stats.worker_start_steps} of {stats.steps} steps), where a DataLoader (training or "
            "validation) starts its workers again: set persistent_workers=True on it."
        )
    elif spikes and dataloader_workers != 0:  # without workers there are none to keep
        advice.append(spikes_advice(stats))
    # Sampled windows cannot tell a restart's first-batch wait from a steady one: with restarts seen,
    # none of the wait counts as steady (more workers would only be more to start each epoch).
    steady_wait = stats.input_share
    if restarts:
        steady_wait = 0.0 if stats.sampled else stats.input_share * (1 - stats.worker_start_wait_share)
    tiny = _tiny_batches(stats, dataloader_workers, steady_wait, spikes)
    if tiny:
        per_batch = stats.samples_per_step
        advice.append(
            f"Each batch holds {per_batch:.3g} sample{'s' if per_batch != 1 else ''} on average and waits "
            f"{stats.data_wait.p50_ms:.2g} ms (median): a worker's batch pays a fixed cost to reach the loop "
            "(pickled, queued, unpacked by the main process), which with so few samples is most of the "
            "wait. Raise batch_size (scaling the learning rate), or return several samples per "
            "__getitem__ (or __getitems__)."
        )
    workers = context.workers
    limit = _what_limits_workers(workers, dataloader_workers or workers.count) if workers else None
    main_loads = (
        workers is not None
        and bool(dataloader_workers)
        and main_process_loads(workers, dataloader_workers or workers.count, steady_wait)
    )
    cannot_help = limit is not None or main_loads
    if dataloader_workers == 0 and context.cgroup_cpu is not None and context.cgroup_cpu.throttled:
        advice += _no_workers_on_a_used_up_quota(context.cgroup_cpu, context.on_gpu)
    elif dataloader_workers == 0:
        advice.append(_no_workers_advice(context))
        advice.append(
            "Move decoding and augmentation off the main process: into DataLoader workers"
            + (", or onto the GPU after the copy." if context.on_gpu else ".")
        )
    elif tiny:
        pass  # the batches' fixed cost, paid in the main process: neither more workers nor cheaper samples
    elif workers is not None and main_loads:
        advice.append(_main_process_loads_advice(workers, steady_wait))
    elif workers is not None and limit is not None:
        advice += _workers_cannot_help(workers, dataloader_workers or workers.count, limit, context.on_gpu)
    elif not spikes and steady_wait >= INPUT_WARN_SHARE and (context.stepping or dataloader_workers is None):
        # Only steady waits call for more workers: between spikes the workers already keep up. A rank that
        # stopped stepping (ending) has its workers gone: where they may run is no longer known.
        if restarts and stats.worker_start_wait_share >= RESTARTS_FIRST_SHARE:
            advice.append(
                f"Then look again: waits outside the epoch starts still take {pct(steady_wait)} of the "
                "window's time; if they remain with persistent workers, add workers."
            )
        else:
            advice.append(_more_workers(dataloader_workers, workers))
    steady = not spikes and not restarts and steady_wait >= INPUT_WARN_SHARE
    if is_bursty(stats) and not spikes and not restarts and not cannot_help:
        advice.append(
            f"Waits are bursty (p95 {stats.data_wait.p95_ms:.0f} ms vs median "
            f"{stats.data_wait.p50_ms:.0f} ms): raise prefetch_factor (default 2) so more "
            "batches are ready ahead."
        )
    if is_pageable(stats) and stats.clock == "gpu":
        advice.append(
            "Set pin_memory=True in the DataLoader and copy with non_blocking=True, so the copy "
            "overlaps compute instead of stalling the loop."
        )
    if not advice and steady and not context.stepping and dataloader_workers is not None:
        # Stopped stepping before its workers' cores were seen (a job that ended within seconds): what may
        # help, hedged, rather than no advice under an input-bound headline.
        advice.append(_unseen_workers(dataloader_workers, context.on_gpu))
    return advice + do_not_tune_pcie(stats, context)


def _tiny_batches(stats: WindowStats, workers: int | None, steady_wait: float, spikes: bool) -> bool:
    """Workers' batches of a few samples (TINY_BATCH_MAX_SAMPLES) whose steady waits are short, each about
    a batch's fixed cost of crossing from a worker (TINY_BATCH_MAX_WAIT_MS), yet add up to an input-bound
    share: the batches' number, not the samples' cost, holds the loop. Longer waits are the samples'."""
    return (
        bool(workers)
        and 0 < stats.samples_per_step <= TINY_BATCH_MAX_SAMPLES
        and not stats.sampled
        and not spikes
        and steady_wait >= INPUT_WARN_SHARE
        and stats.data_wait.p50_ms <= TINY_BATCH_MAX_WAIT_MS
    )


def new_iterator_every_step(stats: WindowStats) -> bool:
    """Most of the window's steps begin an iteration over a loader: iterations of one or two batches,
    the loop making a new iterator each step (``next(iter(loader))``), not epochs."""
    return (
        not stats.sampled
        and stats.steps >= NEW_ITERATOR_MIN_STEPS
        and stats.iteration_start_steps >= NEW_ITERATOR_STEP_SHARE * stats.steps
    )


def new_iterator_advice(seen: str, starts_workers: bool) -> str:
    """A loop that makes a new iterator every step; ``seen``: the evidence, a sentence."""
    started = " and starts the loader's workers again" if starts_workers else ""
    return (
        f"{seen} The loop calls iter(loader) every step (`next(iter(loader))`): each step pays iter()"
        f"{started} and uses one batch of what it prefetched. Make the iterator once, outside the loop "
        "(`it = iter(loader)`; `next(it)` each step; a new one at StopIteration)."
    )


def sampled_restarts_advice(stats: WindowStats) -> str:
    """Attach saw workers end while the job ran on (restarts_workers on a sampled window)."""
    return (
        f"{stats.worker_start_steps} DataLoader worker{'s' if stats.worker_start_steps != 1 else ''} "
        "ended during the window while the job ran on, and the main thread spent "
        f"{pct(stats.worker_start_wait_share * stats.data_wait_share)} of its samples starting or "
        "stopping workers: a loader (training or validation) restarts its workers every epoch "
        "without persistent_workers, or is made anew. Set persistent_workers=True, then look again "
        "before adding workers."
    )


def spikes_advice(stats: WindowStats) -> str:
    """A few steps hold most of a loader-with-workers' wait (has_spikes), its restarts not the cause
    (restarts_workers): where they fall says which remedy fits. At the epochs' first steps with the
    workers kept (most of that wait in starts that started no workers), each epoch's first batches are
    asked for only when it begins (PyTorch's persistent workers resume then): longer epochs pay it less
    often. At epoch starts that did start workers: keep them. Elsewhere: a few batches load far slower
    than the rest, which a deeper prefetch lets the workers get ahead of. (Until session 32 the advice was
    always "if they fall at epoch starts, set persistent_workers=True", to a job with persistent workers
    on the H100.)"""
    spikes = f"longest {stats.data_wait_max_ms:.0f} ms, median {stats.data_wait.p50_ms:.0f} ms"
    at_epoch_starts = stats.iteration_start_wait_share >= SPIKE_MIN_WAIT_FRACTION
    # Of the epoch starts' wait, what fell in starts whose workers were kept (another loader's restarts,
    # a validation pass's, may sit beside them).
    kept = stats.iteration_start_wait_share - stats.worker_start_wait_share
    if at_epoch_starts and kept >= stats.worker_start_wait_share:
        length = f" (epochs of about {stats.iteration_every:.0f} steps)" if stats.iteration_every else ""
        return (
            f"{pct(kept)} of the wait falls in the first step of each epoch "
            f"({stats.iteration_start_steps} of {stats.steps} steps; {spikes}), though the workers persist: "
            f"each epoch's first batches are only asked for when it begins. Longer epochs{length} pay it "
            "less often: a sampler that draws several epochs' samples in one pass, e.g. "
            "RandomSampler(dataset, num_samples=k * len(dataset)). More workers do not help between those "
            "steps."
        )
    if at_epoch_starts:
        return (
            f"{pct(stats.iteration_start_wait_share)} of the wait falls in the first step of each epoch "
            f"({spikes}): set persistent_workers=True so the workers are not started again every epoch."
        )
    return (
        f"A few steps hold most of the wait ({spikes}), not at the starts of epochs: a few batches load far "
        "slower than the rest (large or slow-to-read samples, a recurring storage stall). Raise "
        "prefetch_factor (default 2) so the workers get further ahead of them; more workers do not help "
        "between those steps."
    )


def restarts_workers(stats: WindowStats) -> bool:
    """The wait sits where iter(loader) starts the workers again: an epoch-start pattern, measured."""
    if stats.sampled:  # workers that ended while the job ran: restarted, whatever their share
        return stats.worker_start_steps > 0
    return stats.worker_start_steps > 0 and stats.worker_start_wait_share >= WORKER_START_WAIT_SHARE


def copy_bound_advice(stats: WindowStats) -> list[str]:
    advice: list[str] = []
    if asks_non_blocking_from_pageable(stats):
        advice.append(
            "non_blocking=True is asked of pageable memory, where it silently turns synchronous: "
            "set pin_memory=True in the DataLoader so the copy can overlap compute."
        )
    elif is_pageable(stats):
        advice.append(
            "Batches are copied from pageable memory: set pin_memory=True in the DataLoader "
            "(pinned copies ran ~8x faster than pageable ones on an H200) and non_blocking=True."
        )
    else:
        advice.append(
            "Copies are already pinned: copy with non_blocking=True and do it a batch ahead "
            "(on a side stream) so it overlaps the previous step's compute."
        )
    advice.append("Move fewer bytes: send uint8 images or compact dtypes and convert/normalise on the GPU.")
    return advice


#: What makes checkpoints written in the training loop cheaper for the loop.
CHECKPOINT_REMEDY = (
    "checkpoint less often, or save off the training loop (torch.distributed.checkpoint.async_save; copy "
    "the state to the host, then write it on a thread)."
)


def checkpoint_advice(stats: WindowStats) -> list[str]:
    """Steps that saved a checkpoint took a large share of the window beyond a typical step."""
    if stats.checkpoint_share < CHECKPOINT_WARN_SHARE:
        return []
    count = stats.checkpoint_steps
    return [
        f"torch.save ran in {count} step{'s' if count != 1 else ''} of the window, which took "
        f"{pct(stats.checkpoint_share)} of its time beyond a typical step: {CHECKPOINT_REMEDY}"
    ]


#: What makes validation passes inside the training loop cheaper for it. Its loader may have no workers
#: (torch refuses persistent_workers=True with num_workers=0): the remedy names both settings.
NESTED_PASS_REMEDY = (
    "validate less often or on fewer batches (eval_steps, val_check_interval, limit_val_batches), give its "
    "loader workers that live between passes (num_workers > 0 with persistent_workers=True), and run it "
    "under torch.inference_mode() with a larger batch."
)


def nested_pass_advice(stats: WindowStats) -> list[str]:
    """Steps inside which the loop made a pass over another loader (a validation pass every N steps)
    took a large share of the window beyond a typical step."""
    if stats.nested_pass_share < NESTED_PASS_WARN_SHARE or not stats.nested_pass_steps:
        return []
    return [
        f"A pass over another DataLoader inside the training loop ({passes_when(stats)}) "
        f"took {pct(stats.nested_pass_share)} of the time beyond a typical step: {NESTED_PASS_REMEDY}"
    ]


def periodic_work_advice(stats: WindowStats) -> list[str]:
    """What the loop does every N steps (checkpoints, validation passes), named where it costs enough."""
    return [*checkpoint_advice(stats), *nested_pass_advice(stats)]


CHEAPER_STEP_ON_GPU = (
    "To go faster make the step itself cheaper: mixed precision (bf16 autocast, where it runs in float32), "
    "torch.compile, or better-shaped kernels."
)
#: bf16 on a CPU without AMX or AVX512-BF16 is slower than float32: 5x in session 47's trial (an autoencoder
#: under torch.autocast("cpu") on the 2-core VM, 34.8-37.4 ms a step against 6.6-7.6 ms in float32).
CHEAPER_STEP_ON_CPU = (
    "To go faster make the step itself cheaper: torch.compile, or a batch that keeps every core busy "
    "(torch.get_num_threads() as many as the cores the job may use). bf16 autocast speeds a CPU up only "
    "where it has AMX or AVX512-BF16 (lscpu's flags amx_bf16, avx512_bf16); elsewhere it is slower than "
    "float32."
)


#: ... where the model's threads share saturated cores with busy DataLoader workers (threads_beside_workers):
#: more threads would make it worse.
CHEAPER_STEP_ON_SHARED_CPU = (
    "Then make the step itself cheaper: torch.compile. bf16 autocast speeds a CPU up only where it has AMX "
    "or AVX512-BF16 (lscpu's flags amx_bf16, avx512_bf16); elsewhere it is slower than float32."
)


def threads_beside_workers(context: Context | None) -> str | None:
    """A CPU job's model threads compete with its busy DataLoader workers for saturated cores: each of the
    model's parallel operations waits for its slowest thread, and a thread that waits for a core holds
    them all (WORKERS_BESIDE_THREADS_PERCENT). The remedy is fewer threads, not more cores' worth of them;
    None where nothing says so (a GPU job, workers unseen or idle, cores not saturated)."""
    workers = context.workers if context is not None and not context.on_gpu else None
    if workers is None or not workers.trainer_shares_cores or not workers.allowed_cpus:
        return None
    used, busy = workers.cpu_percent, workers.allowed_cores_busy_percent
    if used is None or busy is None:
        return None
    if used < WORKERS_BESIDE_THREADS_PERCENT or busy < CORES_SATURATED_PERCENT:
        return None
    cores = workers.effective_cores
    left = max(1, int(cores - used / 100.0))
    return (
        f"The {workers.count} DataLoader workers use {used:.0f}% of a core between them on the {cores:g} "
        f"cores the job may use, {busy:.0f}% busy: the model's threads (torch.get_num_threads(), one a core "
        "by default) share those cores with them, and each of the model's operations waits for its slowest "
        f"thread. Try torch.set_num_threads({left}) (the cores the workers leave) and compare samples/s."
    )


def compute_bound_advice(
    stats: WindowStats, hidden_wait: bool, context: Context | None = None, reads_a_loader: bool = True
) -> list[str]:
    """``reads_a_loader``: the step clock saw a DataLoader iterated; without one the loop builds its own
    batches (a tensor indexed in memory, an environment), and no loader setting is there to tune."""
    advice = periodic_work_advice(stats)
    advice.append(
        "The input pipeline keeps up: more workers, pinning or prefetching will not speed this job up."
        if reads_a_loader
        else "The loop builds its own batches (no DataLoader) fast enough: the model's step takes the time."
    )
    if hidden_wait:
        advice.append(
            f"The loop does wait {pct(stats.data_wait_share)} of each step in next(loader), but "
            "queued GPU work hid it: the GPU did not starve."
        )
    advice += do_not_tune_pcie(stats, context)
    shared = threads_beside_workers(context)
    if shared is not None:
        advice += [shared, CHEAPER_STEP_ON_SHARED_CPU]
    elif context is not None and not context.on_gpu:
        advice.append(CHEAPER_STEP_ON_CPU)
    else:
        advice.append(CHEAPER_STEP_ON_GPU)
    if context is not None and not context.on_gpu and not stats.sampled and not stats.partitioned:
        # Under watch() on a CPU, everything between two next() calls reads as compute, the loop's own
        # Python included; `xfertop run` partitions the step and measures the loop's work apart.
        advice.append(
            "On a CPU the step clock cannot tell the model's compute from the loop's own Python (logging, "
            "metrics, bookkeeping): `xfertop attach PID` (or `s` on the job's row) names the lines."
        )
    return advice


def untimed_copy_advice() -> list[str]:
    return [
        "NVML counts kernels, not copies: a GPU that is busy copying reads idle. Copy from pinned memory "
        "(pin_memory=True in the DataLoader) with non_blocking=True, and move fewer bytes (uint8, "
        "compact dtypes; convert on the GPU).",
        "`xfertop run` times every Tensor.to/.cuda and gives the copy's exact share.",
    ]


def host_bound_advice() -> list[str]:
    """The GPU waits for the host, and the step clock cannot say on what: say both causes and remedies."""
    return [
        "If the loop synchronises every step (loss.item(), .cpu(), printing a tensor, "
        "torch.cuda.synchronize()), log every N steps instead, or accumulate on the GPU.",
        "If it launches many small kernels (launch overhead), give the GPU fewer, bigger ones: "
        "torch.compile, CUDA graphs, or a larger batch.",
        "`xfertop attach PID` shows which: the main thread blocked in .item()/synchronize, or busy in "
        "Python dispatch.",
    ]


def pinned_memory_advice(memory: MemoryEvidence | None) -> list[str]:
    if memory is None or not memory.worth_a_warning:
        return []
    gib = memory.pinned_bytes / 2**30
    total = memory.mem_total_bytes / 2**30
    swap = " and the host is swapping" if memory.swapping else ""
    return [
        f"Pinned host memory is {gib:.1f} GiB of {total:.0f} GiB RAM ({pct(memory.pinned_share)}){swap}: "
        "pinned pages cannot be swapped or reclaimed. Each worker pins prefetch_factor batches: "
        "lower num_workers, prefetch_factor or the batch size before the host runs out."
    ]


def sync_bound_advice() -> list[str]:
    return [
        "Look for host-GPU synchronisation inside the step: loss.item(), .cpu(), printing a tensor, "
        "torch.cuda.synchronize(); log every N steps instead of every step.",
        "`xfertop attach PID` shows where the main thread blocks.",
    ]


def healthy_advice(stats: WindowStats, hidden_wait: bool, context: Context | None = None) -> list[str]:
    advice = [*periodic_work_advice(stats), "Nothing to tune in the input pipeline."]
    shared = threads_beside_workers(context)
    if shared is not None:
        advice.append(shared)
    if hidden_wait:
        advice.append(
            f"The {pct(stats.data_wait_share)} wait in next(loader) was hidden by queued GPU "
            "work: not starvation."
        )
    return advice + do_not_tune_pcie(stats, context)


def straggler_advice(rank: int | None) -> list[str]:
    name = f"rank {rank}" if rank is not None else "the slow rank"
    return [
        f"Inspect input loading on {name}: its DataLoader workers, its node's CPU load and its storage.",
        f"The other ranks wait for {name} inside their collectives: fixing it speeds up the whole job.",
    ]


def loop_bound_advice(
    before_model: bool,
    on_gpu: bool,
    reads_a_loader: bool = True,
    loader_workers: int | None = None,
    uses_an_optimizer: bool = False,
    post_blocked: float | None = None,
) -> list[str]:
    """The loop's own code holds the step (and, on a GPU, leaves it idle). ``reads_a_loader``: the step
    clock saw a DataLoader iterated (its num_workers is known); without one the batches come from the
    loop's own iterable (a generator, a list), whose building is the loop's work before the model.
    ``loader_workers``: that loader's num_workers (with none, work moved into the Dataset stays in the
    main process until it gets some). ``uses_an_optimizer``: a torch.optim optimizer was seen stepping,
    so the work after the step is no update of the parameters by hand. ``post_blocked``: the share of the
    work after the step in which the loop's thread was blocked (Context.loop_post_blocked_share)."""
    if before_model and not reads_a_loader:
        advice = [
            "The loop's own code before the model holds each step, with no DataLoader read: building, "
            "converting or augmenting each batch on the CPU, or waiting for batches that a producer of the "
            "job's own makes (a queue, a socket; `xfertop attach PID` tells the two apart). Make the batches "
            "in a Dataset (__getitem__ or a collate_fn) read through a DataLoader with workers, so they are "
            "made in parallel, ahead of the loop."
        ]
    elif before_model:
        workers = (
            "and give the DataLoader workers (num_workers > 0: it has none, so the main process would still "
            "run it) so that they run it"
            if loader_workers == 0
            else "so the DataLoader workers run it"
        )
        advice = [
            "The loop's own code between next(loader) and the model (conversion, augmentation, "
            "normalisation on the CPU) holds each step: move it into the Dataset's __getitem__ (or a "
            f"collate_fn) {workers} in parallel, ahead of the loop."
        ]
    if before_model:
        if on_gpu:
            advice.append(
                "Or do it on the GPU after the copy: copy the raw batch (uint8) and convert, normalise and "
                "augment there (torchvision.transforms.v2 works on CUDA tensors)."
            )
    elif post_blocked is not None and post_blocked >= LOOP_BLOCKED_SHARE:
        advice = [
            "The loop's own code after the optimizer step holds each step, and its thread is blocked, not "
            f"computing, {pct(post_blocked)} of that time: a sleep, a rate limiter, or I/O it waits for (an "
            "fsync, a synchronous log or checkpoint write, an upload, a request). Do it every N steps or "
            "hand it to a background thread; a limiter that paces the job on purpose costs what it is set to."
        ]
    else:
        on_device = " keep running metrics on the device," if on_gpu else ""  # a CPU job's are there already
        by_hand = (
            ""
            if uses_an_optimizer
            else " Where the parameters are updated by hand after backward() instead (no torch.optim), that "
            "update is this work: torch.optim's SGD or AdamW (foreach=True or fused=True) does it in a few "
            "kernels."
        )
        advice = [
            "The loop's own code after the optimizer step (logging, metrics, bookkeeping) holds each step: "
            f"do it every N steps,{on_device} or hand it to a background thread.{by_hand}"
        ]
    advice.append("`xfertop attach PID` (or `s` on the job's row) names the loop's lines that take the time.")
    return advice


def own_producer_advice(reads_a_loader: bool) -> list[str]:
    """The loop's own code before the model is blocked most of its time: it waits for its batches."""
    loader = (
        " The DataLoader's own wait is apart (the step's wait for next()): this wait is in the loop's code."
        if reads_a_loader
        else ""
    )
    return [
        "The loop's thread is blocked, not computing, in its own code between getting a batch and the "
        "model: it waits for input a producer of the job's own makes (a thread or process feeding a queue, "
        "a socket, a file or a service it reads)." + loader + " Where it waits for something else (a lock "
        "another thread holds, the GIL while the job's other threads run Python, a sleep or a rate "
        "limiter), that wait is what to remove.",
        "Make that producer keep ahead: more of them in parallel, a larger queue, cheaper batches; a "
        "DataLoader over an IterableDataset with num_workers > 0 (persistent_workers=True) runs the "
        "producer in worker processes, ahead of the loop.",
        "`xfertop attach PID` (or `s` on the job's row) names the line where the loop waits.",
    ]


def sync_then_host_work_advice() -> list[str]:
    return [
        "The loop synchronises with the GPU every step (loss.item(), .cpu(), .tolist(), printing a tensor, "
        "torch.cuda.synchronize()) and then works on the host while the GPU has nothing queued: log every "
        "N steps, accumulate losses and metrics on the GPU, and read them back rarely.",
        "`xfertop attach PID` (or `s` on the job's row) names the lines.",
    ]


#: Where the host's model step holds the GPU back: the DataLoader's settings are not what to change.
INPUT_NOT_THE_CAUSE = "The input pipeline is not the cause: more workers or pinning will not help."


def launch_bound_advice() -> list[str]:
    return [
        "The host dispatches the model's kernels more slowly than the GPU runs them: many small kernels. "
        "Give the GPU fewer, bigger ones: a larger batch, torch.compile (mode='reduce-overhead' adds CUDA "
        "graphs), fused or foreach optimizers (foreach=True, fused=True).",
        INPUT_NOT_THE_CAUSE,
    ]


_KEEP_OPTIMIZER_ON_GPU = "Where the GPU has the memory, keep the optimizer and its state there."
_OFFLOAD_REMEDIES = (
    "Where the offload must stay: a vectorised CPU optimizer (DeepSpeed's DeepSpeedCPUAdam, torch's "
    "foreach=True), more threads for it (torch.set_num_threads), pinned host buffers for the gradient and "
    "parameter copies, or the CPU step overlapped with the next forward (ZeRO-Offload's delayed parameter "
    "update)."
)
#: A GPU optimizer's step in a few kernels, not several per parameter.
FOREACH_OPTIMIZER_REMEDY = (
    "A foreach or fused optimizer (foreach=True; fused=True for Adam, AdamW, SGD) updates all parameters "
    "in a few kernels instead of several per parameter."
)


def cpu_optimizer_advice() -> list[str]:
    return [
        "The optimizer's parameters are in host memory, so each optimizer step (its arithmetic over every "
        f"parameter) runs on the CPU while the GPU waits. {_KEEP_OPTIMIZER_ON_GPU}",
        _OFFLOAD_REMEDIES,
        "The input pipeline is not the cause: more workers or pinning the batches will not help.",
    ]


def optimizer_step_advice() -> list[str]:
    """Where the host's time in the model step is mostly an optimizer's and where its parameters live is
    not known (attach): kernels launched per parameter, or an offloaded optimizer's CPU arithmetic."""
    return [
        FOREACH_OPTIMIZER_REMEDY,
        "If the optimizer's parameters are in host memory (offloaded to the CPU), its step is the CPU's own "
        f"arithmetic while the GPU waits. {_KEEP_OPTIMIZER_ON_GPU} {_OFFLOAD_REMEDIES}",
        INPUT_NOT_THE_CAUSE,
    ]


#: What each debugging switch (wire.DEBUG_SWITCHES) costs a step, and what to do about it. The CUDA ones
#: matter only to a job on a GPU (debug_switch_advice).
_DEBUG_SWITCH_ADVICE = {
    "anomaly_detection": (
        "Autograd anomaly detection is on (torch.autograd.set_detect_anomaly(True) or detect_anomaly()): "
        "every op records its Python stack and backward checks each result (an MLP's step took 1.5x as "
        "long). Turn it off outside debugging."
    ),
    "profiler": (
        "A torch profiler is recording (torch.profiler.profile, autograd.profiler): every op is timed and "
        "kept, so each step runs slower than without it. Give it a schedule, or stop it outside the steps "
        "you profile."
    ),
    "python_tracer": (
        "A Python tracer is active on the training loop's thread (a debugger such as VS Code's or pdb, or "
        "coverage: sys.settrace): every line of Python the loop, the model's forward and the DataLoader "
        "run is slower. Run without it to train or to measure."
    ),
    "cuda_launch_blocking": (
        "CUDA_LAUNCH_BLOCKING=1 is set: every kernel launch waits until the GPU has run it, so the host "
        "never queues work ahead and the GPU idles between kernels. Unset it outside debugging."
    ),
    "no_cuda_caching_allocator": (
        "PYTORCH_NO_CUDA_MEMORY_CACHING=1 is set: every CUDA allocation calls cudaMalloc and every free "
        "synchronises the device. Unset it outside debugging."
    ),
    "empty_cache_every_step": (
        "torch.cuda.empty_cache() runs every step or nearly: each call waits for the GPU and hands the "
        "caching allocator's free blocks back to the driver, so the next step allocates them again with "
        "cudaMalloc. It frees no memory for this process's own use: call it only where memory must go back "
        "to another process (between phases, not every step)."
    ),
}
_CUDA_SWITCHES = ("cuda_launch_blocking", "no_cuda_caching_allocator", "empty_cache_every_step")


def debug_switch_advice(switches: Iterable[str], on_gpu: bool) -> list[str]:
    """One line for each debugging switch a job runs with (the CUDA ones only on a GPU), in a fixed
    order: the verdict's first advice, whatever its kind, since each slows every step."""
    shown = {name for name in switches if on_gpu or name not in _CUDA_SWITCHES}
    return [line for name, line in _DEBUG_SWITCH_ADVICE.items() if name in shown]


def busy_thread_advice(name: str, share: float) -> str:
    """A Python thread of the job's own busy beside the training loop (RankState.busy_thread)."""
    return (
        f'A Python thread of the job\'s own ("{name}") ran {pct(share)} of a core over the last second: '
        "where that is Python, threads take turns on one GIL, and it holds back the training loop's own "
        "Python in every part of the step alike. Do that work less often, in a process of its own, or in "
        "code that releases the GIL."
    )
