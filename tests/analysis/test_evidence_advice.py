"""Advice that agrees with all the evidence: where the workers may run, how busy those cores are and
the CPU quota of their cgroup, epoch-start waits, copies nobody timed (and the GPU's link that saw
them), NVML only while a rank steps, no PCIe advice for a CPU job, pinned memory against RAM."""

from __future__ import annotations

import dataclasses

import pytest

from analysis.step_records import step_record
from analysis.window_fixtures import load_window
from ui.sample_states import FROZEN_TIME, gpu_state, host_state
from xfertop.analysis import advice as advise
from xfertop.analysis.evidence import WorkersEvidence, workers_evidence
from xfertop.analysis.job_analysis import analyse
from xfertop.analysis.verdict import Verdict
from xfertop.model.gpu import GpuState
from xfertop.model.host import HostState, ProcessStats
from xfertop.model.jobs import JobsState, JobState, RankEnd, RankState, StepRecord

GIB = 2**30


def _verdict(rank: RankState, gpu: GpuState | None = None, host: HostState | None = None) -> Verdict:
    return analyse(_one_job(rank), gpu, host=host).jobs[0].verdict


def _advice(verdict: Verdict) -> str:
    return " ".join(verdict.advice)


def _host_with_workers(
    rank: RankState,
    allowed: tuple[int, ...],
    core_busy: float,
    workers: int = 4,
    cores: int = 16,
    quota_cores: float | None = None,
    throttled_share: float | None = None,
    quota_used_share: float | None = None,
    worker_cpu: float = 90.0,
    main_thread_cpu: float | None = None,
    worker_run_delay: float | None = None,
) -> HostState:
    base = host_state(cores)
    kids = tuple(
        ProcessStats(
            pid=rank.pid + 1 + i,
            name="python",
            user="alice",
            cpu_percent=worker_cpu,
            rss_bytes=GIB,
            num_threads=2,
            pinned_bytes=None,
            cpus_allowed=allowed,
            run_delay_percent=worker_run_delay,
        )
        for i in range(workers)
    )
    trainer = ProcessStats(
        pid=rank.pid,
        name="python",
        user="alice",
        cpu_percent=100.0,
        rss_bytes=4 * GIB,
        num_threads=20,
        pinned_bytes=None,
        children=kids,
        cpus_allowed=tuple(range(cores)),
        cpu_quota_cores=quota_cores,
        cpu_quota_file="/sys/fs/cgroup/system.slice/train.scope/cpu.max" if quota_cores is not None else None,
        cpu_throttled_share=throttled_share,
        cpu_quota_used_share=quota_used_share,
        main_thread_cpu_percent=main_thread_cpu,
    )
    per_core = tuple(core_busy if i in allowed else 5.0 for i in range(cores))
    return dataclasses.replace(base, processes=(trainer,), cpu_per_core_percent=per_core, hostname=rank.host)


def _starved(workers: int = 4) -> RankState:
    return dataclasses.replace(
        load_window("input_bound_gpu").ranks[0], dataloader_workers=workers, device="cuda:0"
    )


def test_a_cpu_job_without_workers_on_two_cores_is_told_to_split_them() -> None:
    # The cores come from the training process's affinity, as the host source reads it.
    rank = dataclasses.replace(_starved(workers=0), device="cpu")
    advice = _advice(
        _verdict(rank, host=_host_with_workers(rank, (0, 1), core_busy=60.0, workers=0, cores=2))
    )
    assert "share this process's 2 cores with the model's threads" in advice, advice
    assert "Set num_workers to 2-4" not in advice, advice
    wide = _host_with_workers(rank, tuple(range(16)), core_busy=60.0, workers=0, cores=16)
    assert "Set num_workers to 2-4 and raise it" in _advice(_verdict(rank, host=wide))


def test_workers_confined_to_fewer_cores_than_workers_are_not_told_to_add_workers() -> None:
    rank = _starved(workers=4)
    verdict = _verdict(rank, host=_host_with_workers(rank, allowed=(3,), core_busy=100.0))
    assert verdict.kind == "input-bound"
    advice = _advice(verdict)
    assert "may run on only 1 core (CPU affinity 3)" in advice
    assert "Raise num_workers" not in advice and "prefetch_factor" not in advice
    assert verdict.evidence["workers_allowed_cpus"] == [3]


def test_workers_allowed_every_core_of_a_small_machine_are_not_told_to_widen_their_affinity() -> None:
    # A 2-core machine, nothing pinned: four workers (a training and a validation loader's) on its two
    # busy cores outnumber the machine's cores; there is no affinity to widen.
    rank = _starved(workers=4)
    host = _host_with_workers(rank, allowed=(0, 1), core_busy=100.0, cores=2)
    advice = _advice(_verdict(rank, host=host))
    assert "The 4 DataLoader workers already outnumber this machine's 2 cores, 100% busy: more workers " in (
        advice
    )
    assert "widen the affinity" not in advice and "Raise num_workers" not in advice


def test_workers_and_their_training_process_filling_the_cores_are_not_told_to_add_workers() -> None:
    # Two workers and the training loop on a 2-core machine, 70% busy: a third worker would take CPU from
    # the other two and from the loop (a trial: 2 workers 832-873 samples/s, 3 workers 800-837).
    rank = _starved(workers=2)
    host = _host_with_workers(rank, allowed=(0, 1), core_busy=70.0, workers=2, cores=2)
    advice = _advice(_verdict(rank, host=host))
    assert (
        "The 2 DataLoader workers and their training process already outnumber this machine's 2 cores, "
        "70% busy: more workers cannot help." in advice
    )
    assert "Raise num_workers" not in advice


def test_workers_that_mostly_wait_are_told_to_add_workers_though_the_training_process_fills_the_cores() -> (
    None
):
    """Session 46's CPU trial: 2 workers whose __getitem__ sleeps 2 ms (storage latency) on a 2-core VM, the
    cores 77% busy with the training process's threads, the workers 17% of a core between them. Before, the
    advice read "... outnumber this machine's 2 cores, 77% busy: more workers cannot help"; with 4 workers
    the job's wait fell from 39% to 16% of the step."""
    rank = _starved(workers=2)
    waiting = _host_with_workers(rank, allowed=(0, 1), core_busy=77.0, workers=2, cores=2, worker_cpu=8.5)
    advice = _advice(_verdict(rank, host=waiting))
    assert "Raise num_workers above 2 (2 cores allowed, 77% busy)" in advice, advice
    assert "the workers use 17% of a core: they mostly wait" in advice, advice
    assert "cannot help" not in advice
    # The same cores and load with workers that compute (90% of a core each): their CPU is what they lack.
    computing = _host_with_workers(rank, allowed=(0, 1), core_busy=77.0, workers=2, cores=2)
    assert "more workers cannot help" in _advice(_verdict(rank, host=computing))
    # The same job read again with its cores 98% busy (the training process's threads): still waiting.
    saturated = _host_with_workers(rank, allowed=(0, 1), core_busy=98.0, workers=2, cores=2, worker_cpu=8.5)
    advice = _advice(_verdict(rank, host=saturated))
    assert "Raise num_workers above 2" in advice and "cannot help" not in advice, advice


def test_workers_that_want_a_core_other_jobs_hold_are_not_read_as_waiting() -> None:
    """Session 48's CI: 3 workers confined to one core of a loaded 2-core box got 31% of it between them,
    under half of what the rule took their core to give them beside only their training process, and the
    summary said "Raise num_workers above 3 ... they mostly wait". The scheduler's run delay says they were
    ready to run the rest of the time: they want the core, and more workers cannot help."""
    rank = _starved(workers=3)
    loaded = _host_with_workers(
        rank, allowed=(0,), core_busy=100.0, workers=3, cores=2, worker_cpu=31 / 3, worker_run_delay=85.0
    )
    advice = _advice(_verdict(rank, host=loaded))
    assert "The 3 DataLoader workers may run on only 1 core (CPU affinity 0)" in advice, advice
    assert "Raise num_workers" not in advice, advice
    # The same CPU with little time waiting for the core: they sleep or wait on storage, and more of them
    # overlap more of those waits.
    sleeping = _host_with_workers(
        rank, allowed=(0,), core_busy=100.0, workers=3, cores=2, worker_cpu=31 / 3, worker_run_delay=2.0
    )
    advice = _advice(_verdict(rank, host=sleeping))
    assert "Raise num_workers above 3" in advice and "they mostly wait" in advice, advice


def test_workers_that_wait_on_a_main_process_busy_through_the_wait_are_not_told_to_add_workers() -> None:
    """Session 47's trial: a custom Sampler doing Python work per index, 58% of each step in next(), 2
    workers using 19% of a core between them. `xfertop run` said "Raise num_workers above 2 ... they mostly
    wait", the live view "more workers cannot help. Make each sample cheaper"; 4 workers ran it in 20.62 s
    against 20.76 s with 2, and its samples are one tensor index each. The main thread on its CPU through the
    wait says the main process does the loader's work (the sampler, unpacking the batches)."""
    rank = _starved(workers=2)
    busy = _host_with_workers(
        rank, allowed=(0, 1), core_busy=98.0, workers=2, cores=2, worker_cpu=9.5, main_thread_cpu=99.0
    )
    advice = _advice(_verdict(rank, host=busy))
    assert "The main process does the loader's work itself" in advice and "Sampler" in advice, advice
    assert "Raise num_workers" not in advice and "cheaper)" not in advice, advice
    assert "prefetch_factor" not in advice
    # The same workers with the main thread blocked in the wait (its CPU is the model step's): they wait on
    # storage, and more of them overlap more of those waits.
    blocked = _host_with_workers(
        rank, allowed=(0, 1), core_busy=98.0, workers=2, cores=2, worker_cpu=9.5, main_thread_cpu=20.0
    )
    advice = _advice(_verdict(rank, host=blocked))
    assert "Raise num_workers above 2" in advice and "does the loader's work" not in advice, advice


def test_workers_confined_to_one_core_that_they_share_out_between_them_are_not_taken_for_waiting() -> None:
    # Eight CPU-bound workers on one core get an eighth of it each: their CPU is all the core gives them.
    rank = _starved(workers=8)
    host = _host_with_workers(rank, allowed=(3,), core_busy=100.0, workers=8, worker_cpu=12.0)
    advice = _advice(_verdict(rank, host=host))
    assert "may run on only 1 core (CPU affinity 3)" in advice and "Raise num_workers" not in advice


def test_a_cpu_jobs_input_advice_names_no_gpu_remedy() -> None:
    """A job without a GPU was told to "move augmentation onto the GPU after the copy" (session 46's
    trial); a CUDA job still is."""
    for device, on_gpu in (("cpu", False), ("cuda:0", True)):
        rank = dataclasses.replace(_starved(workers=2), device=device)
        host = _host_with_workers(rank, allowed=(0, 1), core_busy=100.0, workers=2, cores=2)
        advice = _advice(_verdict(rank, host=host))
        assert "more workers cannot help" in advice, advice
        assert ("GPU" in advice) is on_gpu, (device, advice)
        none = _advice(_verdict(dataclasses.replace(rank, dataloader_workers=0)))
        assert "num_workers=0" in none and ("GPU" in none) is on_gpu, (device, none)


def test_a_job_that_ended_before_its_workers_were_seen_still_gets_advice() -> None:
    """A job that raised after ~1 s of input-bound training: in two runs of three its summary read
    "input-bound: 41% of each step waits for the DataLoader" and no advice at all (its workers were never
    sampled; an ended rank gives no workers evidence, so neither "more workers" nor "cannot help" was
    said). Both remedies, hedged, now."""
    ended = dataclasses.replace(
        _starved(workers=2),
        status="finished",
        heartbeat_age_s=4.0,
        end=RankEnd(closed_ring=True, exit_code=1),
    )
    verdict = _verdict(ended)
    assert verdict.kind == "input-bound"
    advice = _advice(verdict)
    assert "More than 2 workers may help if their cores have room" in advice, verdict.advice
    assert "make each sample cheaper" in advice


def test_a_training_process_kept_off_the_workers_cores_leaves_them_room() -> None:
    rank = _starved(workers=2)
    host = _host_with_workers(rank, allowed=(2, 3), core_busy=70.0, workers=2)
    (trainer,) = host.processes
    elsewhere = dataclasses.replace(trainer, cpus_allowed=(0, 1))
    host = dataclasses.replace(host, processes=(elsewhere,))
    assert "Raise num_workers above 2 (2 cores allowed, 70% busy)" in _advice(_verdict(rank, host=host))


def test_workers_outnumbering_idle_cores_wait_on_storage_and_may_still_gain_from_more() -> None:
    rank = _starved(workers=4)
    verdict = _verdict(rank, host=_host_with_workers(rank, allowed=(3,), core_busy=10.0))
    assert "Raise num_workers above 4 (1 core allowed, 10% busy)" in _advice(verdict)


def test_workers_on_saturated_cores_are_not_told_to_add_workers() -> None:
    rank = _starved(workers=4)
    verdict = _verdict(rank, host=_host_with_workers(rank, allowed=(0, 1, 2, 3, 4, 5, 6, 7), core_busy=97.0))
    advice = _advice(verdict)
    assert "are 97% busy: more workers cannot help" in advice
    assert "Raise num_workers" not in advice


def test_workers_with_idle_cores_are_told_to_add_workers_and_why() -> None:
    rank = _starved(workers=2)
    host = _host_with_workers(rank, allowed=tuple(range(16)), core_busy=20.0, workers=2)
    verdict = _verdict(rank, host=host)
    assert "Raise num_workers above 2 (16 cores allowed, 20% busy)" in _advice(verdict)


def test_workers_outnumbering_their_cgroups_cpu_quota_are_told_the_quota_not_to_add_workers() -> None:
    rank = _starved(workers=8)
    all_cores = tuple(range(64))
    host = _host_with_workers(
        rank, all_cores, core_busy=30.0, workers=8, cores=64, quota_cores=2.0, throttled_share=0.4
    )
    verdict = _verdict(rank, host=host)
    assert verdict.kind == "input-bound"
    advice = _advice(verdict)
    assert (
        "The 8 DataLoader workers share a CPU quota of 2 cores (cgroup cpu.max) with their training "
        "process, and the job was throttled in 40% of periods: more workers cannot help. Raise the job's "
        "CPU limit"
    ) in advice
    assert "Raise num_workers" not in advice and "64 cores" not in advice and "prefetch_factor" not in advice


def test_a_quota_below_the_workers_whose_throttling_is_not_known_yet_still_bounds_them() -> None:
    rank = _starved(workers=8)
    host = _host_with_workers(rank, tuple(range(64)), core_busy=30.0, workers=8, cores=64, quota_cores=2.0)
    advice = _advice(_verdict(rank, host=host))
    assert (
        "The 8 DataLoader workers share a CPU quota of 2 cores (cgroup cpu.max) with their training "
        in advice
    )
    assert "throttled" not in advice and "Raise num_workers" not in advice


def test_a_throttled_cgroup_with_a_quota_above_the_workers_is_used_up_all_the_same() -> None:
    rank = _starved(workers=4)
    host = _host_with_workers(
        rank, tuple(range(16)), core_busy=20.0, workers=4, quota_cores=6.0, throttled_share=0.6
    )
    advice = _advice(_verdict(rank, host=host))
    assert (
        "The job uses all of its CPU quota of 6 cores (cgroup cpu.max): it was throttled in 60% of " in advice
    )
    assert "Raise num_workers" not in advice


def test_a_cgroup_throttled_while_it_uses_its_quota_up_is_told_more_workers_cannot_help() -> None:
    rank = _starved(workers=4)
    host = _host_with_workers(
        rank,
        tuple(range(16)),
        core_busy=20.0,
        workers=4,
        quota_cores=6.0,
        throttled_share=0.6,
        quota_used_share=0.97,
    )
    advice = _advice(_verdict(rank, host=host))
    assert (
        "The job uses all of its CPU quota of 6 cores (cgroup cpu.max): it was throttled in 60% of periods, "
        "97% of it used, so more workers cannot help." in advice
    )
    assert "Raise num_workers" not in advice


def test_a_cgroup_throttled_in_bursts_with_cpu_to_spare_may_still_gain_from_more_workers() -> None:
    # Throttled in 60% of periods, yet only 40% of the 6-core quota used on average: its threads ask for
    # many cores at once, then idle. The quota is not what bounds the workers.
    rank = _starved(workers=4)
    host = _host_with_workers(
        rank,
        tuple(range(16)),
        core_busy=20.0,
        workers=4,
        quota_cores=6.0,
        throttled_share=0.6,
        quota_used_share=0.4,
    )
    advice = _advice(_verdict(rank, host=host))
    assert "more workers cannot help" not in advice and "uses all of its CPU quota" not in advice
    assert (
        "Raise num_workers above 4 (a CPU quota of 6 cores, cgroup cpu.max, throttled in 60% of periods in "
        "bursts, 40% of it used on average)" in advice
    )


def test_a_loop_without_workers_throttled_in_bursts_is_told_to_use_workers() -> None:
    rank = _starved(workers=0)
    host = _host_with_workers(
        rank,
        (0, 1, 2, 3),
        core_busy=30.0,
        workers=0,
        quota_cores=4.0,
        throttled_share=0.5,
        quota_used_share=0.3,
    )
    advice = _advice(_verdict(rank, host=host))
    assert "Set num_workers to 2-4 per GPU" in advice
    assert "Workers would share that quota" not in advice


def test_workers_in_an_unthrottled_cgroup_wait_on_storage_and_are_told_its_quota() -> None:
    # Eight workers on a 2-core quota that the cgroup never runs out of: they wait on something else.
    rank = _starved(workers=8)
    host = _host_with_workers(
        rank, tuple(range(64)), core_busy=10.0, workers=8, cores=64, quota_cores=2.0, throttled_share=0.0
    )
    advice = _advice(_verdict(rank, host=host))
    assert (
        "Raise num_workers above 8 (a CPU quota of 2 cores, cgroup cpu.max, throttled in 0% of periods)"
        in advice
    )


def test_a_quota_above_the_allowed_cores_leaves_the_affinity_advice_as_it_was() -> None:
    rank = _starved(workers=2)
    host = _host_with_workers(
        rank, tuple(range(16)), core_busy=20.0, workers=2, quota_cores=32.0, throttled_share=0.0
    )
    assert "Raise num_workers above 2 (16 cores allowed, 20% busy)" in _advice(_verdict(rank, host=host))
    confined = _host_with_workers(
        rank, (3,), core_busy=100.0, workers=4, quota_cores=4.0, throttled_share=0.1
    )
    advice = _advice(_verdict(_starved(workers=4), host=confined))
    assert "may run on only 1 core (CPU affinity 3)" in advice and "quota" not in advice


def test_the_workers_evidence_carries_the_ranks_quota_and_its_effective_cores() -> None:
    rank = _starved(workers=8)
    host = _host_with_workers(
        rank, tuple(range(64)), core_busy=30.0, workers=8, cores=64, quota_cores=1.5, throttled_share=0.3
    )
    workers = workers_evidence(rank, host)
    assert workers is not None and workers.cpu_quota_cores == 1.5 and workers.effective_cores == 1.5
    assert workers.quota_below_cores and workers.throttled and workers.saturated
    assert workers.cpu_quota_file == "/sys/fs/cgroup/system.slice/train.scope/cpu.max"
    unlimited = workers_evidence(rank, _host_with_workers(rank, (0, 1), core_busy=30.0, workers=8))
    assert unlimited is not None and unlimited.effective_cores == 2.0
    assert not unlimited.quota_below_cores and not unlimited.throttled and not unlimited.saturated
    # Built by keyword as the attach path does, without the cgroup fields.
    attach = WorkersEvidence(count=2, allowed_cpus=(0, 1), cpu_percent=None, allowed_cores_busy_percent=None)
    assert attach.cpu_quota_cores is None and attach.effective_cores == 2.0 and not attach.saturated


def test_a_loop_without_workers_that_uses_up_its_quota_is_told_workers_would_share_it() -> None:
    rank = _starved(workers=0)
    host = _host_with_workers(rank, (0,), core_busy=50.0, workers=0, quota_cores=1.0, throttled_share=0.8)
    advice = _advice(_verdict(rank, host=host))
    assert (
        "num_workers=0: every batch is loaded and decoded inside the training loop, and the job uses all "
        "of its CPU quota of 1 core (cgroup cpu.max): it was throttled in 80% of periods. Workers would "
        "share that quota: raise the job's CPU limit"
    ) in advice
    assert "Set num_workers to 2-4" not in advice and "into DataLoader workers" not in advice
    unthrottled = _host_with_workers(
        rank, (0,), core_busy=50.0, workers=0, quota_cores=1.0, throttled_share=0.1
    )
    assert "Set num_workers to 2-4 per GPU" in _advice(_verdict(rank, host=unthrottled))


def _epoch_steps(
    count: int = 60, every: int = 10, start_wait_ms: float = 120.0, steady_wait_ms: float = 1.0
) -> tuple[StepRecord, ...]:
    """Epochs of ``every`` steps whose first step starts the workers (non-persistent workers)."""
    steps = []
    for i in range(count):
        start = i % every == 0
        wait = start_wait_ms if start else steady_wait_ms
        steps.append(
            StepRecord(
                step=i + 10,
                wall_ms=wait + 20.0,
                data_wait_ms=wait,
                copy_cpu_ms=0.0,
                loop_pre_ms=0.0,
                sync_ms=0.0,
                loop_post_ms=0.0,
                gpu_gap_ms=None,
                h2d_bytes=0,
                samples=32,
                pinned=False,
                pageable_non_blocking=False,
                epoch_start=start,
                workers_started=start,
            )
        )
    return tuple(steps)


def test_waits_at_epoch_starts_with_non_persistent_workers_call_for_persistent_workers() -> None:
    rank = dataclasses.replace(_starved(workers=4), steps=_epoch_steps(), device="cpu")
    verdict = _verdict(rank)
    assert verdict.kind == "input-bound"
    advice = _advice(verdict)
    assert "set persistent_workers=True" in advice and "first step of each epoch" in advice
    assert "Raise num_workers" not in advice and "prefetch_factor" not in advice


def _untimed_copies(*, partitioned: bool = False) -> RankState:
    """A GPU rank under xfertop.watch whose copies nobody marked (no copy timing): 22 ms steps, the host
    in the model but for 0.4 ms in next(), the GPU's measured gaps ~0.3 ms. NVML (kernels only) tells
    the rest. ``partitioned``: under `xfertop run` without copy timing instead (the model's calls and
    syncs are seen: no sync, no loop work)."""
    rank = load_window("input_bound_gpu").ranks[0]
    steps = tuple(
        step_record(
            i,
            wall_ms=22.0 + (i % 5) * 0.1,
            wait_ms=0.4,
            gap_ms=0.3,
            samples=32,
            partitioned=partitioned,
        )
        for i in range(300, 400)
    )
    return dataclasses.replace(rank, steps=steps, device="cuda:0", copy_timing=False, dataloader_workers=4)


def _sole_user(rank: RankState, util: float, rx: float) -> GpuState:
    state = gpu_state(util=util, rx=rx)
    first = state.gpus[0]
    proc = dataclasses.replace(first.processes[0], pid=rank.pid)
    return dataclasses.replace(state, gpus=(dataclasses.replace(first, processes=(proc,)),))


def test_a_gpu_whose_link_is_busy_while_its_kernels_idle_is_copy_bound_when_copies_are_not_timed() -> None:
    rank = _untimed_copies()
    verdict = _verdict(rank, _sole_user(rank, util=5.0, rx=9.0e9))
    assert verdict.kind == "copy-bound", verdict.headline
    assert "did not time" in verdict.headline and "9.0 GB/s" in verdict.headline
    assert verdict.headline.startswith("copy-bound (likely): ")
    assert "pin_memory=True" in _advice(verdict)
    assert "Do not tune PCIe" not in _advice(verdict)


def test_a_gpu_idle_without_link_traffic_is_host_bound_with_both_causes_named() -> None:
    """Under xfertop.watch the step clock sees no syncs and no model calls: a GPU busy 30% with no gap
    may wait for .item() as well as for dispatch, and the advice names both."""
    rank = _untimed_copies()
    verdict = _verdict(rank, _sole_user(rank, util=30.0, rx=0.05e9))
    assert verdict.kind == "host-bound", verdict.headline
    advice = _advice(verdict)
    assert "loss.item()" in advice and "torch.compile" in advice and "CUDA graphs" in advice


def test_under_xfertop_run_a_gpu_idle_inside_the_model_is_launch_bound() -> None:
    """`xfertop run` saw the model's calls and no sync: the GPU's idle is inside the model's dispatch."""
    rank = _untimed_copies(partitioned=True)
    verdict = _verdict(rank, _sole_user(rank, util=30.0, rx=0.05e9))
    assert (verdict.kind, verdict.severity) == ("launch-bound", "critical"), verdict.headline
    assert "torch.compile" in _advice(verdict) and "CUDA graphs" in _advice(verdict)


def test_nvml_speaks_for_a_rank_only_while_it_steps() -> None:
    rank = dataclasses.replace(_untimed_copies(), heartbeat_age_s=4.0)  # typical step 22 ms: tearing down
    verdict = _verdict(rank, _sole_user(rank, util=0.0, rx=0.0))
    assert verdict.kind == "compute-bound"  # by the host's model share: NVML's 0% is not this rank's
    assert verdict.evidence["gpu_busy_share"] is None


def test_a_cpu_job_is_not_told_about_pcie() -> None:
    rank = load_window("recorded_cpu_compute_bound").ranks[0]
    verdict = _verdict(dataclasses.replace(rank, device="cpu", copy_timing=True))
    assert "PCIe" not in _advice(verdict)


def test_copies_nobody_measured_are_not_called_zero() -> None:
    rank = dataclasses.replace(load_window("healthy_gpu").ranks[0], device="cuda:0", copy_timing=False)
    rank = dataclasses.replace(
        rank,
        # Nobody timed the copies: their host time is in the model's.
        steps=tuple(dataclasses.replace(s, copied=False, h2d_bytes=0, copy_cpu_ms=0.0) for s in rank.steps),
    )
    verdict = _verdict(rank)
    assert "only 0%" not in _advice(verdict) and "copy 0%" not in verdict.headline
    assert verdict.evidence["copies_measured"] is False


def test_copies_the_step_clock_missed_are_named_against_the_gpus_rx() -> None:
    rank = dataclasses.replace(
        load_window("compute_bound_hidden_wait").ranks[0], device="cuda:0", copy_timing=True
    )
    verdict = _verdict(rank, _sole_user(rank, util=99.0, rx=1.5e9))
    assert verdict.kind == "compute-bound"
    assert "The GPU's link receives 1.5 GB/s but the step clock saw copies of only" in _advice(verdict)


def test_pinned_memory_large_against_ram_is_warned_of() -> None:
    rank = dataclasses.replace(_starved(workers=2), pinned_host_bytes=40 * GIB, host="h200-box")
    host = dataclasses.replace(host_state(), mem_total_bytes=128 * GIB, hostname="h200-box")
    advice = _advice(_verdict(rank, host=host))
    assert "Pinned host memory is 40.0 GiB of 128 GiB RAM (31%)" in advice
    small = dataclasses.replace(rank, pinned_host_bytes=2 * GIB)
    assert "Pinned host memory" not in _advice(_verdict(small, host=host))


def test_untimed_pageable_copies_read_as_copy_bound_at_the_rate_an_h200_showed() -> None:
    """Scenario d under xfertop.watch on the H200: 100 MB pageable batches, 74% of each step copying by
    the synchronised truth, NVML 36%, the link receiving ~5.3 GB/s: 8% of Gen5 x16, 35% if pageable."""
    rank = _untimed_copies()
    verdict = _verdict(rank, _sole_user(rank, util=36.0, rx=5.3e9))
    assert verdict.kind == "copy-bound"
    low, high = verdict.evidence["untimed_copy_share_range"]
    assert low < 0.10 <= 0.30 <= high


def test_an_early_likely_copy_bound_says_both() -> None:
    rank = _untimed_copies()
    early = dataclasses.replace(rank, steps=rank.steps[:9])
    verdict = _verdict(early, _sole_user(early, util=5.0, rx=9.0e9))
    assert verdict.headline.startswith("copy-bound (likely; early, 9 steps): ")


def test_a_rank_of_several_does_not_read_its_gpus_rx_as_its_input() -> None:
    # Without NVLink, NCCL moves its peers' gradients over PCIe: RX is not the rank's batches.
    rank = dataclasses.replace(_untimed_copies(), world_size=2, rank=0)
    verdict = _verdict(rank, _sole_user(rank, util=5.0, rx=9.0e9))
    assert verdict.kind != "copy-bound", verdict.headline
    # What the same rank reads with no link traffic at all: the RX is not looked at.
    assert verdict.rule == _verdict(rank, _sole_user(rank, util=5.0, rx=0.0)).rule
    assert "untimed_copy_share_range" not in verdict.evidence


def test_workers_under_a_forkserver_are_its_children_and_their_confinement_is_seen() -> None:
    # Python 3.14's default start method: the rank's children are the forkserver and a resource tracker
    # (every core allowed); the 4 workers, confined to core 3, are the forkserver's children.
    rank = _starved(workers=4)
    host = _host_with_workers(rank, allowed=(3,), core_busy=100.0)
    (trainer,) = host.processes
    tracker = dataclasses.replace(trainer.children[0], pid=rank.pid + 90, cpus_allowed=tuple(range(16)))
    forkserver = dataclasses.replace(tracker, pid=rank.pid + 91, children=trainer.children)
    rank_process = dataclasses.replace(trainer, children=(forkserver, tracker))
    host = dataclasses.replace(host, processes=(rank_process,))
    advice = _advice(_verdict(rank, host=host))
    assert "may run on only 1 core (CPU affinity 3)" in advice and "Raise num_workers" not in advice


@pytest.mark.parametrize("partitioned", [False, True])
def test_a_cpu_compute_bound_job_is_pointed_at_attach_only_when_the_loop_was_not_measured(
    partitioned: bool,
) -> None:
    """Under watch() a CPU step's 'compute' holds the loop's own Python; `xfertop run` measured it apart."""
    rank = load_window("recorded_cpu_compute_bound").ranks[0]
    steps = tuple(dataclasses.replace(s, partitioned=partitioned) for s in rank.steps)
    verdict = _verdict(dataclasses.replace(rank, device="cpu", steps=steps))
    assert verdict.kind == "compute-bound", verdict.headline
    assert ("cannot tell the model's compute" in _advice(verdict)) is not partitioned


def test_a_cpu_jobs_model_threads_beside_busy_workers_are_told_to_leave_them_cores() -> None:
    """Session 48's trial: a CTR model with a heavy Python collate_fn in 2 workers (76% of a core between
    them) and 2 model threads on 2 cores 98.5% busy read "a batch that keeps every core busy
    (torch.get_num_threads() as many as the cores)"; torch.set_num_threads(1) made each step 1.47x
    faster, and fewer workers were slower. Workers that barely run leave the old remedy."""
    rank = load_window("recorded_cpu_compute_bound").ranks[0]
    rank = dataclasses.replace(rank, device="cpu", dataloader_workers=2)
    busy = _host_with_workers(rank, allowed=(0, 1), core_busy=98.5, workers=2, cores=2, worker_cpu=38.0)
    verdict = _verdict(rank, host=busy)
    assert verdict.kind == "compute-bound", verdict.headline
    advice = _advice(verdict)
    assert "The 2 DataLoader workers use 76% of a core between them on the 2 cores" in advice, advice
    assert "Try torch.set_num_threads(1)" in advice and "torch.compile" in advice, advice
    assert "keeps every core busy" not in advice, advice
    idle = _host_with_workers(rank, allowed=(0, 1), core_busy=98.5, workers=2, cores=2, worker_cpu=5.0)
    advice = _advice(_verdict(rank, host=idle))
    assert "set_num_threads" not in advice and "keeps every core busy" in advice, advice
    on_gpu = _advice(_verdict(dataclasses.replace(rank, device="cuda:0"), host=busy))
    assert "set_num_threads" not in on_gpu, on_gpu


# -- a loop that ends keeps the advice its steps earned (issue 20, item 5) ------------------------------
def _one_job(rank: RankState) -> JobsState:
    job = JobState(rank.job_key, "train.py", (rank,))
    return JobsState(timestamp=FROZEN_TIME, jobs=(job,), ring_dir="/x")


def test_a_loop_that_ends_keeps_its_workers_advice_and_verdict_through_to_the_frozen_one() -> None:
    """Eight workers confined to one core, live: the affinity advice. The loop ends: its last step closes
    at the next() that raises StopIteration, then its workers shut down (non-persistent) and the GPU goes
    quiet while the heartbeat still counts as fresh, then the process exits. Every snapshot keeps the
    live verdict and its advice (before: "launch-bound: busy 0%", and only "Do not tune PCIe")."""
    live = _starved(workers=8)
    confined = _host_with_workers(live, allowed=(3,), core_busy=100.0, workers=8)
    first = analyse(_one_job(live), _sole_user(live, util=40.0, rx=0.5e9), host=confined)
    verdict = first.jobs[0].verdict
    assert verdict.kind == "input-bound" and "may run on only 1 core" in _advice(verdict), verdict.advice

    trainer = confined.processes[0]
    no_workers = dataclasses.replace(confined, processes=(dataclasses.replace(trainer, children=()),))
    quiet = _sole_user(live, util=0.0, rx=0.0)
    # No step for 0.3 s (steps of ~46 ms): overdue, though within NVML's freshness (1.5 s).
    tearing_down = dataclasses.replace(live, heartbeat_age_s=0.3)
    closing = analyse(_one_job(tearing_down), quiet, previous=first, host=no_workers)
    assert closing.jobs[0].verdict == verdict and not closing.jobs[0].frozen

    ended = dataclasses.replace(
        live, status="finished", heartbeat_age_s=4.0, end=RankEnd(closed_ring=True, exit_code=0)
    )
    frozen = analyse(_one_job(ended), quiet, previous=closing, host=no_workers)
    assert frozen.jobs[0].frozen and frozen.jobs[0].verdict == verdict


def test_workers_gone_between_epochs_keep_their_evidence_while_the_rank_steps() -> None:
    """Non-persistent workers restart each epoch: a snapshot between two epochs, while new steps still
    come in, judges the rank with the workers' evidence last seen."""
    live = _starved(workers=8)
    confined = _host_with_workers(live, allowed=(3,), core_busy=100.0, workers=8)
    first = analyse(_one_job(live), None, host=confined)
    trainer = confined.processes[0]
    between = dataclasses.replace(confined, processes=(dataclasses.replace(trainer, children=()),))
    newer = dataclasses.replace(
        live, steps=(*live.steps[1:], dataclasses.replace(live.steps[-1], step=10**6))
    )
    again = analyse(_one_job(newer), None, previous=first, host=between)
    assert again.jobs[0].ranks[0].context.workers == first.jobs[0].ranks[0].context.workers
    assert "may run on only 1 core" in _advice(again.jobs[0].verdict)


def test_a_live_job_between_steps_within_its_cadence_is_judged_again() -> None:
    """A step of ~46 ms and a heartbeat 60 ms old: not overdue, so NVML's new reading counts."""
    live = _starved(workers=4)
    first = analyse(_one_job(live), _sole_user(live, util=40.0, rx=0.5e9))
    again = analyse(
        _one_job(dataclasses.replace(live, heartbeat_age_s=0.06)),
        _sole_user(live, util=97.0, rx=0.5e9),
        previous=first,
    )
    assert again.jobs[0].verdict.evidence["gpu_busy_share"] == 0.97


# -- NVML's reading is the rank's only if taken while the rank stepped -----------------------------------
def _at(state: GpuState, seconds: float) -> GpuState:
    return dataclasses.replace(state, timestamp=FROZEN_TIME + seconds)


def _jobs_at(rank: RankState, seconds: float, heartbeat_age_s: float) -> JobsState:
    rank = dataclasses.replace(rank, heartbeat_age_s=heartbeat_age_s)
    return dataclasses.replace(_one_job(rank), timestamp=FROZEN_TIME + seconds)


def test_a_gpu_reading_taken_after_the_loops_last_step_leaves_the_one_taken_while_it_stepped() -> None:
    """51 ms steps, the GPU 95% busy. The jobs state, read at 1.0 s, saw a step end 50 ms before (not
    overdue); the GPU source read NVML at 1.6 s, after the loop's last step: 0%, the job's teardown (the
    HF Trainer on the H200 read "launch-bound: the GPU is busy only 0%" so). The reading of the
    snapshot before stands."""
    live = dataclasses.replace(load_window("healthy_gpu").ranks[0], device="cuda:0")
    first = analyse(_jobs_at(live, 0.0, 0.02), _at(_sole_user(live, util=95.0, rx=0.1e9), 0.0))
    assert first.jobs[0].verdict.kind == "compute-bound", first.jobs[0].verdict.headline

    after_last_step = _at(_sole_user(live, util=0.0, rx=0.0), 1.6)
    again = analyse(_jobs_at(live, 1.0, 0.05), after_last_step, previous=first)
    verdict = again.jobs[0].verdict
    assert verdict.kind == "compute-bound", verdict.headline
    assert verdict.evidence["gpu_busy_share"] == 0.95

    # With no reading taken while it stepped, its busy share is not known, not 0%.
    alone = analyse(_jobs_at(live, 1.0, 0.05), after_last_step).jobs[0].verdict
    assert alone.evidence["gpu_busy_share"] is None and "busy only 0%" not in alone.headline


def test_a_gpu_reading_older_than_the_jobs_state_counts_when_the_rank_stepped_after_it() -> None:
    live = dataclasses.replace(load_window("healthy_gpu").ranks[0], device="cuda:0")
    first = analyse(_jobs_at(live, 0.0, 0.02), _at(_sole_user(live, util=95.0, rx=0.1e9), 0.0))
    # Read at 0.5 s; the jobs state at 1.0 s saw a step end at 0.95 s: the reading is the rank's.
    again = analyse(
        _jobs_at(live, 1.0, 0.05), _at(_sole_user(live, util=60.0, rx=0.1e9), 0.5), previous=first
    )
    assert again.jobs[0].verdict.evidence["gpu_busy_share"] == 0.6


def test_the_loops_work_after_the_step_is_told_to_stay_on_the_device_only_on_a_gpu() -> None:
    # Session 47's trial: "keep running metrics on the device" for a CPU job, whose metrics are there.
    on_cpu = " ".join(advise.loop_bound_advice(before_model=False, on_gpu=False))
    assert "every N steps" in on_cpu and "on the device" not in on_cpu, on_cpu
    on_gpu = " ".join(advise.loop_bound_advice(before_model=False, on_gpu=True))
    assert "keep running metrics on the device" in on_gpu, on_gpu
