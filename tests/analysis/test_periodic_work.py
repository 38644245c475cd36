"""Work the loop does every N steps (a validation pass, a checkpoint) judged over whole periods of it, so a
verdict does not flip with the window's phase, and the passes named with their remedy.

Session 30's Lightning job validated at batches 50 and 100 of each 128-batch epoch (val_check_interval=50):
a window of the last 50 steps held two passes, one, or none, and its verdict went loop-bound, compute-bound,
loop-bound as the job ran. The steps here are shaped after its ring: 34 ms steps, and a pass (a 70 ms wait
for the validation loader's workers, 300 ms of validation after the model) in the steps that held one."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
from step_records import step_record

from xfertop.analysis.steps import window_stats
from xfertop.analysis.verdict import rank_verdict
from xfertop.model.jobs import StepRecord
from xfertop.sources.jobs.ring_reader import RingReader


def lightning_like(count: int, passes_at: tuple[int, ...] = (49, 99), epoch: int = 128) -> list[StepRecord]:
    steps = []
    for i in range(count):
        validating = i % epoch in passes_at
        steps.append(
            step_record(
                i,
                model_ms=32.0,
                wait_ms=72.0 if validating else 1.5,
                loop_post_ms=300.0 if validating else 0.5,
                nested_pass=validating,
                partitioned=True,
                epoch_start=validating or i % epoch == 0,
            )
        )
    return steps


def advice_text(verdict) -> str:  # type: ignore[no-untyped-def]
    return " ".join(verdict.advice)


def test_the_verdict_keeps_its_kind_whatever_the_windows_phase() -> None:
    steps = lightning_like(700)
    kinds = {rank_verdict(steps[:end]).kind for end in range(300, 700)}
    assert kinds == {"loop-bound"}, kinds
    # Without whole periods the same steps flip: the last 50 steps hold no pass between 100 and 128+49.
    # (A check that this test can fail: a 50-step window ending at step 176 has no validation in it.)
    plain = [
        step_record(
            s.step, model_ms=32.0, wait_ms=s.data_wait_ms, loop_post_ms=s.loop_post_ms, partitioned=True
        )
        for s in steps
    ]
    assert {rank_verdict(plain[:end]).kind for end in range(300, 700)} >= {"loop-bound", "compute-bound"}


def test_the_window_spans_whole_periods_and_names_the_passes() -> None:
    stats = window_stats(lightning_like(600))
    assert stats is not None
    # Two passes in one epoch of 128 steps, whatever the phase: every ~64 steps.
    assert (stats.steps, stats.nested_pass_steps, stats.nested_pass_period) == (128, 2, 64)
    verdict = rank_verdict(lightning_like(600))
    assert verdict.headline.startswith(
        "loop-bound: passes over another DataLoader inside the training loop "
        "(validation, about every 64 steps)"
    ), verdict.headline
    assert verdict.advice[0].startswith("A pass over another DataLoader inside the training loop"), (
        verdict.advice
    )
    assert "val_check_interval" in verdict.advice[0]
    # Not the advice for per-step bookkeeping: the passes are all of the loop's work here.
    assert "logging, metrics, bookkeeping" not in advice_text(verdict)


def test_a_job_that_stops_validating_is_judged_on_its_recent_steps_again() -> None:
    steps = lightning_like(500)
    # From step 500 on no more passes: once the steps since the last one outlast its period, the window
    # is the last 50 steps again, and the job reads compute-bound.
    steps += [
        step_record(i, model_ms=32.0, wait_ms=1.5, loop_post_ms=0.5, partitioned=True)
        for i in range(500, 700)
    ]
    stats = window_stats(steps)
    assert stats is not None and stats.steps == 50 and stats.nested_pass_steps == 0
    assert rank_verdict(steps).kind == "compute-bound"


def test_rare_periodic_work_is_a_phase_not_a_share() -> None:
    # A pass every 300 steps: whole periods would need more steps than a window may hold.
    steps = lightning_like(1500, passes_at=(299,), epoch=300)
    stats = window_stats(steps)
    assert stats is not None and stats.steps == 50


def test_cheap_passes_are_not_named() -> None:
    steps = [
        step_record(
            i, model_ms=32.0, wait_ms=1.5, loop_post_ms=2.0 if i % 50 == 49 else 0.5, nested_pass=i % 50 == 49
        )
        for i in range(400)
    ]
    verdict = rank_verdict(steps)
    assert verdict.kind == "compute-bound"
    assert "another DataLoader" not in verdict.headline + advice_text(verdict)


RING = Path(__file__).resolve().parents[1] / "fixtures" / "rings" / "h100_lightning_validates_every_50.ring"


def test_a_real_lightning_jobs_validation_passes_read_as_what_they_cost() -> None:
    """The ring of session 30's Lightning job on an H100 (docs/measurements/h200-2026-12-05-s30, call 3):
    validation every 50 training batches over a loader whose 2 workers start at each pass. Its truth (the
    host clock around each phase, synchronised): 31% waiting (the pass's workers starting), 19% the passes'
    own work, 50% training. NVML read the GPU 39% busy; one step in k had its gap timed, rarely one after
    a pass, so the passes' idle was in what NVML left unexplained, and the job read "launch-bound: the GPU
    is busy only 39% of each step while the host dispatches the model" at most windows."""
    reader = RingReader(str(RING))
    reader.poll()
    steps = list(reader.steps_tuple())
    assert len(steps) > 1000 and sum(s.nested_pass for s in steps) > 10
    for end in range(200, len(steps) + 1, 20):
        verdict = rank_verdict(steps[:end], gpu_busy_share=0.39, dataloader_workers=2)
        assert verdict.kind == "input-bound", (end, verdict.headline)
        # The passes hold the wait: named first, then their loader's remedy.
        assert "mostly in passes over another DataLoader" in verdict.headline, (end, verdict.headline)
        assert verdict.advice[0].startswith("Most of the wait is in passes over another DataLoader")
        assert "its loader has num_workers=2" in verdict.advice[0], verdict.advice
        assert "persistent_workers=True" in verdict.advice[1], (end, verdict.advice)


def test_passes_over_a_loader_without_workers_that_hold_the_wait_are_named_with_its_remedy() -> None:
    # Session 31's j11: validation every 40 steps over a loader with num_workers=0 (~550 ms a pass),
    # training fed by 2 workers. Its truth: 84% of the time in the passes. Before, the advice read "A
    # few steps hold most of the wait ... set persistent_workers=True", a setting with no workers to keep.
    steps = [
        step_record(
            i,
            model_ms=1.0,
            wait_ms=540.0 if i % 40 == 39 else 0.5,
            loop_post_ms=20.0 if i % 40 == 39 else 0.1,
            nested_pass=i % 40 == 39,
            partitioned=True,
        )
        for i in range(400)
    ]
    verdict = rank_verdict(steps, dataloader_workers=0)
    assert verdict.kind == "input-bound", verdict.headline
    assert verdict.headline.endswith(
        "(num_workers=0), mostly in passes over another DataLoader inside the training loop (validation, "
        "about every 40 steps)"
    ), verdict.headline
    assert verdict.advice[0].startswith("Most of the wait is in passes over another"), verdict.advice
    assert "persistent_workers" not in advice_text(verdict)
    assert "num_workers=0: every batch is loaded" in advice_text(verdict)


def test_slow_steps_without_workers_get_no_advice_about_keeping_workers() -> None:
    # The same spikes with no pass behind them (a shard opened every 40 steps in __getitem__).
    steps = [step_record(i, model_ms=1.0, wait_ms=540.0 if i % 40 == 39 else 0.5) for i in range(400)]
    verdict = rank_verdict(steps, dataloader_workers=0)
    assert verdict.kind == "input-bound" and "passes" not in verdict.headline, verdict.headline
    assert "persistent_workers" not in advice_text(verdict), verdict.advice


def test_a_window_that_is_not_whole_periods_gives_the_passes_spacing_or_none() -> None:
    # Two passes 16 steps apart in the last 50 steps (too few for whole periods): every 16, not 50 / 2.
    # Session 31: a 52-step window of such a job read "about every 26 steps".
    def job(count: int, passes: tuple[int, ...]) -> list[StepRecord]:
        return [
            step_record(i, model_ms=1.0, wait_ms=300.0 if i in passes else 0.5, nested_pass=i in passes)
            for i in range(count)
        ]

    stats = window_stats(job(60, (23, 39)))
    assert stats is not None and (stats.steps, stats.nested_pass_steps) == (50, 2)
    assert stats.nested_pass_period == 16
    assert "about every 16 steps" in rank_verdict(job(60, (23, 39))).headline
    # One pass in the window says no period.
    verdict = rank_verdict(job(40, (20,)))
    assert "(validation, one in the window's 35 steps)" in verdict.headline, verdict.headline  # past warm-up


def test_an_input_bound_job_still_names_passes_that_cost_it_apart_from_the_wait() -> None:
    # Session 31's j76 shape: the training loader starves the loop (wait 6 of 10 ms a step), and a
    # validation pass every 40 steps costs 100 ms of the loop's own work with little waiting.
    steps = [
        step_record(
            i,
            model_ms=4.0,
            wait_ms=6.0,
            loop_pre_ms=100.0 if i % 40 == 39 else 0.1,
            nested_pass=i % 40 == 39,
            partitioned=True,
        )
        for i in range(400)
    ]
    verdict = rank_verdict(steps, dataloader_workers=2)
    assert verdict.kind == "input-bound", verdict.headline
    assert "mostly in passes" not in verdict.headline
    assert any(
        line.startswith("A pass over another DataLoader inside the training loop") for line in verdict.advice
    )


def epochs_with_a_slow_first_batch(
    count: int, epoch: int = 32, first_wait_ms: float = 25.0
) -> list[StepRecord]:
    """Persistent workers: each epoch's first batch is only asked for when the epoch begins, so it waits
    (session 33's j83 on the H100: 64-step epochs; j75: 32)."""
    return [
        step_record(
            i,
            model_ms=10.0,
            wait_ms=first_wait_ms if i % epoch == 0 else 0.5,
            partitioned=True,
            epoch_start=i % epoch == 0,
        )
        for i in range(count)
    ]


def test_epochs_are_whole_periods_too() -> None:
    steps = epochs_with_a_slow_first_batch(600)
    kinds = {rank_verdict(steps[:end]).kind for end in range(200, 600)}
    assert len(kinds) == 1, kinds
    stats = window_stats(steps)
    assert stats is not None and stats.steps == 64 and stats.iteration_start_steps == 2
    # The same steps without their epochs marked: a 50-step window holds one epoch start or two, and the
    # verdict follows the window's phase (a check that this test can fail).
    plain = [step_record(s.step, model_ms=10.0, wait_ms=s.data_wait_ms, partitioned=True) for s in steps]
    assert len({rank_verdict(plain[:end]).kind for end in range(200, 600)}) == 2


def passes_and_checkpoints(count: int, validate_every: int = 40, save_every: int = 60) -> list[StepRecord]:
    """30 ms steps; every ``validate_every`` steps a 120 ms validation pass after the model, every
    ``save_every`` steps a 30 ms torch.save, in the same step where both fall due (as a loop that does
    `if step % 40 == 0: validate()` then `if step % 60 == 0: save()` books them)."""
    steps = []
    for i in range(count):
        validating = i % validate_every == validate_every - 1
        saving = i % save_every == save_every - 1
        steps.append(
            step_record(
                i,
                model_ms=30.0,
                loop_post_ms=120.0 * validating + 30.0 * saving,
                nested_pass=validating,
                checkpoint=saving,
                partitioned=True,
            )
        )
    return steps


@pytest.mark.parametrize("validate_every, save_every", [(40, 60), (40, 80), (60, 40)])
def test_passes_and_checkpoints_of_other_periods_are_judged_over_whole_periods_of_both(
    validate_every: int, save_every: int
) -> None:
    """A CPU job here validated every 40 steps and saved every 60: its window, whole periods of the two
    marks merged (60 steps from a save back past a pass to the save before), held two passes, and the
    advice read "validation, about every 30 steps" and the passes at 17% of the time where its own clock
    measured 13%. Whatever the window's phase, the passes' period and share are theirs, and the steps
    that hold both are split between them by what each costs alone."""
    count = 800
    steps = passes_and_checkpoints(count, validate_every, save_every)
    wall = sum(s.wall_ms for s in steps)
    pass_truth = (count // validate_every) * 120.0 / wall
    save_truth = (count // save_every) * 30.0 / wall
    for end in range(500, 800, 7):
        stats = window_stats(steps[:end])
        assert stats is not None
        assert stats.nested_pass_period == validate_every, (end, stats.steps, stats.nested_pass_steps)
        assert stats.nested_pass_share == pytest.approx(pass_truth, abs=0.01), end
        assert stats.checkpoint_share == pytest.approx(save_truth, abs=0.01), end


def host_ahead_of_the_gpu(count: int, validate_every: int = 0, queue_steps: int = 10) -> list[StepRecord]:
    """Steps as the host clocks them when it runs ahead of a busy GPU, shaped after scenario k on an H100:
    1 ms of host work a step queues 7 ms of kernels, the host runs at most ``queue_steps`` steps ahead (the
    launch queue, the caching allocator; 0: it waits for each step's kernels), and every
    ``validate_every`` steps a pass queues 8 batches of 2.5 ms of kernels after the model and waits for
    them (``float(correct)``), which drains the queue. Each step copies its batch to the GPU (2 MB)."""
    host_ms, kernels_ms, pass_kernels_ms = 1.0, 7.0, 8 * 2.5
    now = gpu_free = 0.0
    done: list[float] = []  # when each step's kernels finished
    steps = []
    for i in range(count):
        began = now
        now += host_ms
        if queue_steps and len(done) >= queue_steps:
            now = max(now, done[-queue_steps])  # the queue is full: the host waits for the GPU
        gpu_free = max(now, gpu_free) + kernels_ms
        done.append(gpu_free)
        if not queue_steps:
            now = gpu_free  # `loss.item()` every step: nothing is left queued
        validating = validate_every > 0 and i % validate_every == validate_every - 1
        post = 0.0
        if validating:
            gpu_free = max(now, gpu_free) + pass_kernels_ms
            post = max(now, gpu_free) - now  # the pass's sync waits for everything queued
            now += post
        steps.append(
            step_record(
                i,
                model_ms=now - began - post,
                loop_post_ms=post,
                nested_pass=validating,
                partitioned=True,
                h2d_bytes=2 << 20,
            )
        )
    return steps


def test_a_pass_that_drains_queued_work_costs_what_it_added_to_the_window() -> None:
    """The pass's `float(correct)` waits for the training steps' kernels the host queued ahead of it, and
    the steps after it run short while the queue refills: its step's wall beyond a typical one is not
    what the pass cost. Session 41's k read 42-56% of the time where its synchronised truth said 13%."""
    with_passes = host_ahead_of_the_gpu(1000, validate_every=25)
    without = host_ahead_of_the_gpu(1000)
    # What the passes added to the last 500 steps (20 whole periods), as a share of their time.
    wall = sum(s.wall_ms for s in with_passes[-500:])
    truth = (wall - sum(s.wall_ms for s in without[-500:])) / wall
    assert 0.09 < truth < 0.12
    stats = window_stats(with_passes)
    assert stats is not None and stats.nested_pass_steps >= 2
    assert abs(stats.nested_pass_share - truth) < 0.02, (stats.nested_pass_share, truth)
    # The pass steps alone hold the queue they drained: read as they were, they say far more.
    window = stats_window(with_passes)
    typical = statistics.median(s.wall_ms for s in window)
    gross = sum(s.wall_ms - typical for s in window if s.nested_pass) / sum(s.wall_ms for s in window)
    assert gross > truth + 0.15
    verdict = rank_verdict(with_passes, gpu_busy_share=0.99)
    assert f"took {round(truth * 100)}% of the time beyond a typical step" in advice_text(verdict), (
        verdict.advice
    )


def test_a_cpu_jobs_checkpoints_cost_their_steps_whatever_the_steps_after_them() -> None:
    """Session 50's trial: a CPU job saving every 5 steps (76 MB, ~200 ms) read "saving checkpoints: 16% of
    the time" where its own timers said 24%: its model steps ran 46-96 ms by themselves, and the short ones
    after each save were counted back as a GPU queue refilling. A CPU job has no queue: each save costs
    what its step took beyond a typical one."""
    jitter = [0.0, -13.0, -14.0, -16.0, -33.0, 6.0, 9.0, -2.0, 4.0, 12.0, 1.0, -5.0]
    steps = [
        step_record(
            i,
            model_ms=84.0 + jitter[i % len(jitter)],
            loop_post_ms=200.0 if i % 5 == 0 else 0.3,
            checkpoint=i % 5 == 0,
            partitioned=True,
        )
        for i in range(300)
    ]
    window = stats_window(steps)
    typical = statistics.median(s.wall_ms for s in window)
    truth = sum(s.wall_ms - typical for s in window if s.checkpoint) / sum(s.wall_ms for s in window)
    stats = window_stats(steps)
    assert stats is not None and stats.checkpoint_share == pytest.approx(truth, abs=0.01), (
        stats.checkpoint_share,
        truth,
    )


def stats_window(steps: list[StepRecord]) -> list[StepRecord]:
    stats = window_stats(steps)
    assert stats is not None
    return [s for s in steps if stats.first_step <= s.step <= stats.last_step]


def test_a_pass_on_a_gpu_the_host_does_not_run_ahead_of_costs_its_whole_step() -> None:
    # The same job with a sync every step: nothing is queued ahead of the pass, the steps after it keep
    # their pace, and the pass costs all it holds beyond a typical step.
    steps = host_ahead_of_the_gpu(1000, validate_every=25, queue_steps=0)
    window = stats_window(steps)
    typical = statistics.median(s.wall_ms for s in window)
    gross = sum(s.wall_ms - typical for s in window if s.nested_pass) / sum(s.wall_ms for s in window)
    without = host_ahead_of_the_gpu(1000, queue_steps=0)
    wall = sum(s.wall_ms for s in steps[-500:])
    truth = (wall - sum(s.wall_ms for s in without[-500:])) / wall
    stats = window_stats(steps)
    assert stats is not None and stats.nested_pass_share == pytest.approx(gross, abs=0.005)
    assert stats.nested_pass_share == pytest.approx(truth, abs=0.01)


def test_the_passes_remedy_never_asks_for_persistent_workers_without_workers() -> None:
    """Session 46's CPU trial: validation every 40 steps over a loader with num_workers=0 costing 10% of the
    time (the passes' own work, not their waits). The advice said "keep its loader's workers between
    passes (persistent_workers=True)", which torch refuses for num_workers=0 (ValueError): a job that
    followed it would not start."""
    steps = [
        step_record(
            i,
            model_ms=5.0,
            wait_ms=0.3,
            loop_post_ms=60.0 if i % 40 == 39 else 0.2,
            nested_pass=i % 40 == 39,
            partitioned=True,
        )
        for i in range(400)
    ]
    verdict = rank_verdict(steps, dataloader_workers=0)
    naming = [line for line in verdict.advice if "persistent_workers=True" in line]
    assert naming, verdict.advice
    assert all("num_workers > 0" in line for line in naming), naming
