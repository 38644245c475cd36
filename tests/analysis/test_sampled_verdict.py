"""Sampled shares go through the step clock's verdict engine and come out labelled as sampled."""

from __future__ import annotations

from dataclasses import replace

from pyspy_support import fixture_lines, fixture_window
from xfertop.analysis.sampled_verdict import MIN_SAMPLES, judge_stacks, keep_last_judged, sampled_verdict
from xfertop.analysis.stack_classify import ClassShares, LoopHost, RankStacks, WorkerLoad, summarise_window
from xfertop.analysis.verdict import Verdict
from xfertop.model.stacks import AttachTarget, StacksState, WindowPlacement


def fixture_rank(name: str) -> RankStacks:
    return summarise_window(fixture_window(name), fixture_lines(name))


def rank_with(pid: int = 1, **counts: int) -> RankStacks:
    return RankStacks(pid=pid, shares=ClassShares(counts=counts))  # type: ignore[arg-type]


def test_each_real_bottleneck_gets_its_verdict() -> None:
    expected = {
        "starved_w0": "input-bound",
        "starved_w2": "input-bound",
        "compute": "compute-bound",
        "copy": "copy-bound",
        "native_sync": "sync-bound",
    }
    for name, kind in expected.items():
        verdict = sampled_verdict([(None, fixture_rank(name))])
        assert verdict.kind == kind, (name, verdict.headline)
        assert verdict.evidence["source"] == "sampled"
        assert verdict.headline.endswith("(py-spy samples)")
        assert verdict.to_dict()["evidence"]["source"] == "sampled"


def test_input_bound_advice_says_whether_the_workers_are_saturated() -> None:
    verdict = sampled_verdict([(None, fixture_rank("starved_w2"))])
    assert verdict.severity == "critical"
    assert "All 2 DataLoader workers are busy" in verdict.advice[0]
    assert "num_workers=0" in sampled_verdict([(None, fixture_rank("starved_w0"))]).headline


def test_workers_inside_getitem_on_little_cpu_are_not_told_to_be_cheaper_and_more_at_once() -> None:
    """Session 46's trial: 2 workers whose __getitem__ sleeps (storage latency) read, in one attach verdict,
    "All 2 DataLoader workers are busy 86% of the time: make __getitem__ / transforms cheaper" and "Between
    them the workers use 20% of a core: they mostly wait ...". Their host CPU says which: waiting."""
    rank = RankStacks(
        pid=1,
        shares=ClassShares(counts={"data_wait": 40, "compute": 60}),
        workers=(
            WorkerLoad(pid=2, busy_share=0.86, samples=100),
            WorkerLoad(pid=3, busy_share=0.86, samples=100),
        ),
        workers_allowed_cpus=(0, 1),
        workers_cpu_percent=20.0,
        workers_cores_busy_percent=90.0,
    )
    advice = " ".join(sampled_verdict([(None, rank)]).advice)
    assert "they mostly wait" in advice and "Raise num_workers above 2" in advice, advice
    assert "are busy 86%" not in advice and "cheaper" not in advice, advice


def test_idle_workers_while_the_main_thread_waits_point_at_transfer_or_pinning() -> None:
    rank = RankStacks(
        pid=1,
        shares=ClassShares(counts={"data_wait": 80, "compute": 20}),
        workers=(WorkerLoad(pid=2, busy_share=0.1, samples=100),),
        pin_busy_share=0.9,
    )
    verdict = sampled_verdict([(None, rank)])
    assert verdict.kind == "input-bound"
    assert "mostly idle" in verdict.advice[0] and "pin-memory thread is busy 90%" in verdict.advice[0]


def test_a_wait_the_busy_gpu_never_felt_is_not_input_bound_under_attach() -> None:
    # H200, scenario k (a training and a validation loader): attach read "input-bound: 35% of each step
    # waits for the DataLoader" and "Raise num_workers" while NVML had the GPU 99.6% busy; `xfertop run`
    # read the same job compute-bound, its wait hidden by queued GPU work. The same recorded window of a
    # starved loader, judged with the GPU's busy share:
    starved = fixture_rank("starved_w2")
    busy = sampled_verdict([(None, replace(starved, gpu_busy_share=0.996))])
    assert busy.kind == "compute-bound", busy.headline
    assert "the GPU is busy 100%" in busy.headline and "hidden by queued GPU work" in busy.headline
    assert not any("num_workers" in advice for advice in busy.advice)
    idle = sampled_verdict([(None, replace(starved, gpu_busy_share=0.2))])
    assert idle.kind == "input-bound", idle.headline


def test_a_window_without_a_loader_sample_does_not_say_the_job_has_no_dataloader() -> None:
    """Session 46's trial: a job reading a quick DataLoader with num_workers=0 left no sample in it, and
    attach said "The loop builds its own batches (no DataLoader)". Samples cannot tell a loader too quick
    to be caught from none: the step clock knows (no loader iterated), attach does not."""
    verdict = sampled_verdict([(None, rank_with(compute=95, other=5))])
    assert verdict.kind == "compute-bound", verdict.headline
    advice = " ".join(verdict.advice)
    assert "no DataLoader" not in advice and "input pipeline keeps up" in advice, advice


def test_samples_blocked_in_item_make_it_sync_bound() -> None:
    verdict = sampled_verdict([(None, rank_with(gpu_sync=40, compute=55, data_wait=5))])
    assert verdict.kind == "sync-bound" and verdict.severity == "critical"
    assert any(".item()" in advice for advice in verdict.advice)


def test_item_of_a_cpu_tensor_in_a_process_without_a_gpu_is_no_wait_for_the_gpu() -> None:
    """Session 46's trial: attach read a CPU job whose loop augmented batches with .item() and .tolist() of
    CPU tensors "sync-bound: the main thread waits for the GPU" (its truth: loop-bound, 46%), and after that
    verdict was mended its rank line still said "waiting for the GPU (sync) 20%". A process known to use no
    GPU has no GPU to wait for: those samples are its host's compute in the verdict and in the shares."""
    window = fixture_window("native_sync")
    no_gpu = summarise_window(
        replace(window, placement=WindowPlacement((), (), uses_cuda=False)), fixture_lines("native_sync")
    )
    assert no_gpu.shares.share("gpu_sync") == 0.0 and no_gpu.shares.share("compute") > 0.5, no_gpu.shares
    verdict = sampled_verdict([(None, no_gpu)])
    assert verdict.kind != "sync-bound" and "waits for the GPU" not in verdict.headline, verdict.headline
    # Where the process maps the CUDA driver, or its maps could not be read, the samples still say sync.
    for placement in (WindowPlacement((), (), uses_cuda=True), WindowPlacement((), (), uses_cuda=None)):
        rank = summarise_window(replace(window, placement=placement), fixture_lines("native_sync"))
        assert rank.shares.share("gpu_sync") > 0.5, (placement, rank.shares)
        assert sampled_verdict([(None, rank)]).kind == "sync-bound", placement


def test_copy_bound_from_samples_does_not_claim_to_know_about_pinning() -> None:
    verdict = sampled_verdict([(None, fixture_rank("copy"))])
    assert not any("already pinned" in advice for advice in verdict.advice)
    assert "cannot see whether batches are pinned" in verdict.advice[0]


def test_one_starved_rank_among_computing_ones_is_a_straggler() -> None:
    ranks = [
        (0, rank_with(1, compute=90, data_wait=10)),
        (1, rank_with(2, compute=40, data_wait=60)),
        (2, rank_with(3, compute=88, data_wait=12)),
    ]
    verdict = sampled_verdict(ranks)
    assert verdict.kind == "straggler" and "rank 1" in verdict.headline
    assert verdict.evidence["straggler_rank"] == 1


def test_a_two_rank_stragglers_median_is_the_other_ranks() -> None:
    """Session 46's trial: attach on a 2-rank DDP job read "rank 1 waits for data in 85% of samples
    (median 45%)", the mean of itself and rank 0's 5%; the step clock says "the others' median 5%"."""
    ranks = [(0, rank_with(1, compute=95, data_wait=5)), (1, rank_with(2, compute=15, data_wait=85))]
    verdict = sampled_verdict(ranks)
    assert verdict.kind == "straggler", verdict.headline
    assert "85% of samples (the others' median 5%)" in verdict.headline, verdict.headline
    assert verdict.evidence["median_input_share"] == 0.05


def test_too_few_samples_is_warming_up() -> None:
    verdict = sampled_verdict([(None, rank_with(compute=MIN_SAMPLES - 1))])
    assert verdict.kind == "warming-up"


def test_a_state_whose_windows_all_failed_reports_the_reason() -> None:
    state = StacksState(
        timestamp=0.0,
        targets=(AttachTarget(pid=5),),
        windows=(),
        error="process 5 is not running any more: check the pid.",
    )
    summaries, verdict = judge_stacks(state)
    assert summaries == () and verdict.headline.startswith("process 5 is not running")


def test_a_healthy_verdict_says_when_many_samples_are_unrecognised() -> None:
    verdict = sampled_verdict([(None, rank_with(other=40, compute=50, data_wait=5, copy=5))])
    assert verdict.kind == "healthy"
    assert "40% of samples are outside the training phases" in verdict.headline


def test_a_window_mostly_outside_the_training_loop_gets_no_verdict() -> None:
    # The CPU corpus: windows at a job's start and end read 84-100% "other" and were judged "healthy".
    verdict = sampled_verdict([(None, rank_with(other=84, compute=16))])
    assert verdict.kind == "warming-up"
    assert verdict.headline.startswith("not in a training loop: 84% of samples")


def test_sampled_advice_never_claims_pcie_is_irrelevant() -> None:
    # Samples see host time only: a pinned non_blocking copy costs the host nothing.
    verdict = sampled_verdict([(None, rank_with(compute=95, data_wait=3, copy=2))])
    assert verdict.kind == "compute-bound"
    assert not any("PCIe" in line for line in verdict.advice)


def test_a_window_without_a_verdict_keeps_the_last_judged_one_with_its_age() -> None:
    judged = Verdict("input-bound", "warn", "input-bound: 60% of each step waits for the DataLoader")
    teardown = Verdict("warming-up", "info", "warming-up: 2 of the 40 samples a verdict needs")
    shown, last = keep_last_judged(judged, 100.0, None)
    assert shown is judged and last is not None
    shown, kept = keep_last_judged(teardown, 104.0, last)
    assert shown.kind == "input-bound" and kept is last
    assert shown.headline == (
        "input-bound: 60% of each step waits for the DataLoader; last verdict, 4 s ago "
        "(now warming-up: 2 of the 40 samples a verdict needs)"
    )
    # Nothing judged yet: the window's own warming-up stands.
    assert keep_last_judged(teardown, 1.0, None) == (teardown, None)


def test_on_a_cpu_the_loops_own_python_is_loop_work_as_xfertop_run_reads_it() -> None:
    # A CPU job: 55% in the model, 40% building and json-dumping per-sample logs in the loop body.
    # `xfertop run` partitions the step and reads it loop-bound (the loop's work is 10% or more and the
    # largest part past its bar): attach reads the same kind and names the lines. Until session 26
    # attach read it compute-bound (the loop's Python counted as compute below 30% or the model's share).
    loop = LoopHost(share=0.4, loop_line="train.py:12", top_lines=(("train.py:19", 0.4),))
    rank = RankStacks(
        pid=1, shares=ClassShares(counts={"compute": 55, "data_wait": 5, "other": 40}), loop_host=loop
    )
    verdict = sampled_verdict([(None, rank)])
    assert verdict.kind == "loop-bound", verdict.headline
    assert "holds the main thread 40% of samples" in verdict.headline
    assert verdict.advice[0].startswith("Most of it on train.py:19 40%"), verdict.advice
    # Below the bar (8%), or below the input's share, the loop's Python stays the step's compute.
    small = replace(rank, loop_host=replace(loop, share=0.08))
    small = replace(small, shares=ClassShares(counts={"compute": 87, "data_wait": 5, "other": 8}))
    assert sampled_verdict([(None, small)]).kind == "compute-bound"


def test_workers_beside_a_loader_the_main_thread_reads_itself_name_that_loader() -> None:
    # zip(fast loader with 2 workers, slow loader with num_workers=0): the workers idle, the main thread
    # loads the slow one's samples itself. Not "suspect inter-process transfer".
    rank = RankStacks(
        pid=1,
        shares=ClassShares(counts={"main_loading": 45, "data_wait": 5, "compute": 50}),
        workers=(
            WorkerLoad(pid=2, busy_share=0.02, samples=100),
            WorkerLoad(pid=3, busy_share=0.02, samples=100),
        ),
        main_fetch_share=0.45,  # in fetch.py / __getitem__ under next(loader): running the Dataset
    )
    verdict = sampled_verdict([(None, rank)])
    assert verdict.kind == "input-bound"
    advice = " ".join(verdict.advice)
    assert (
        "The main thread runs a Dataset itself in 45% of samples although 2 DataLoader workers run" in advice
    )
    assert "inter-process" not in advice and "Raise num_workers above" not in advice
    assert "num_workers=0" in advice


def test_unpickling_workers_batches_is_not_the_main_thread_loading_itself() -> None:
    rank = RankStacks(
        pid=1,
        shares=ClassShares(counts={"main_loading": 60, "compute": 40}),
        workers=(WorkerLoad(pid=2, busy_share=0.1, samples=100),),
        main_fetch_share=0.0,  # main_loading here is rebuild_storage_fd: the workers' batches arriving
    )
    advice = " ".join(sampled_verdict([(None, rank)]).advice)
    assert "runs a Dataset itself" not in advice and "inter-process" in advice


def test_a_gpu_jobs_own_iterable_or_checkpoints_holding_the_loop_are_loop_bound_without_nvml() -> None:
    # A CUDA process NVML gave no busy share for (not its GPU's only user): its loop spends 60% of
    # samples building batches in its own generator, or saving checkpoints; the model step 20%.
    cuda = WindowPlacement((), (), uses_cuda=True)
    building = LoopHost(0.6, "train.py:30", (("data.py:7", 0.6),))
    shares = ClassShares(counts={"compute": 20, "data_wait": 5, "other": 75})
    parts = (("loop_iterable", "building batches in its own iterable"), ("loop_checkpoint", "saving"))
    for part, words in parts:
        rank = RankStacks(pid=1, shares=shares, placement=cuda, dispatch_share=0.2, **{part: building})
        verdict = sampled_verdict([(None, rank)])
        assert verdict.kind == "loop-bound", verdict.headline
        assert f"(mostly {words}" in verdict.headline and "data.py:7 60%" in verdict.advice[0]
    # The same with NVML saying the GPU is busy 90%: the generator runs while the GPU computes.
    rank = RankStacks(pid=1, shares=shares, placement=cuda, dispatch_share=0.2, loop_iterable=building)
    verdict = sampled_verdict([(None, replace(rank, gpu_busy_share=0.9))])
    assert verdict.kind != "loop-bound", verdict.headline
