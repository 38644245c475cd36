"""What attach says of Trainers (and plain loops) that validate inside their training run, against what
`xfertop run` says of the same jobs: py-spy windows recorded from real CPU processes
(fixtures/pyspy_trainers), judged with NVML's answers about a GPU (faked: the hardware boundary) where the
case needs one.

Under `xfertop run` the Hugging Face job (eval_steps=50) reads "loop-bound: passes over another
DataLoader inside the training loop (validation, about every 50 steps) take 14% of the time" and the
Lightning job (val_check_interval=50, its validation loader's 2 workers starting at each pass) "input-bound:
30% of each step waits for the DataLoader" with "set persistent_workers=True" (session 30). Attach read
the first "compute-bound: compute is 90%": a validation pass's forward was the training step's compute."""

from __future__ import annotations

import re
from dataclasses import replace

from pyspy_phases_support import TRAINERS, nvml_readings, phase_lines, phase_window
from xfertop.analysis.sampled_verdict import judge_stacks
from xfertop.analysis.stack_classify import RankStacks, summarise_window
from xfertop.analysis.verdict import Verdict
from xfertop.model.gpu import GpuState
from xfertop.model.stacks import AttachTarget, StacksState

HF, LIGHTNING = "hf_eval_every_50", "lightning_val_every_50"


def judged(name: str, busy_percent: float | None = None, seconds: float = 12.0) -> tuple[RankStacks, Verdict]:
    pid = phase_window(name, folder=TRAINERS).root_pid
    readings: list[GpuState] = [] if busy_percent is None else nvml_readings(pid, busy_percent)
    started_at = readings[0].timestamp - 1.0 if readings else 0.0
    on_gpu = True if readings else None
    window = phase_window(name, started_at=started_at, uses_cuda=on_gpu, folder=TRAINERS, duration_s=seconds)
    state = StacksState(timestamp=started_at + seconds, targets=(AttachTarget(pid=pid),), windows=(window,))
    (rank,), verdict = judge_stacks(state, lambda _: phase_lines(name, TRAINERS), readings)
    return rank, verdict


def test_a_hugging_face_trainers_evaluation_is_the_loops_work_not_compute() -> None:
    rank, verdict = judged(HF)
    assert 0.08 < rank.loop_validation.share < 0.3, rank.loop_validation
    assert rank.loop_validation.top_lines[0][0] == "_evaluate (trainer.py)"
    assert verdict.kind == "loop-bound", verdict.headline
    assert "(mostly validation passes)" in verdict.headline
    assert verdict.advice[0].startswith("Validation passes inside the training run"), verdict.advice
    assert "eval_steps" in verdict.advice[0]


def test_with_the_gpu_busy_the_passes_are_named_beside_the_compute_bound_verdict() -> None:
    _, verdict = judged(HF, busy_percent=95.0)
    assert verdict.kind == "compute-bound", verdict.headline
    assert verdict.advice[0].startswith("Validation passes inside the training run"), verdict.advice


def test_a_lightning_job_waiting_for_its_validation_workers_reads_as_run_reads_it() -> None:
    rank, verdict = judged(LIGHTNING)
    assert rank.loop_validation.share > 0.1 and rank.loop_validation.top_lines[0][0].startswith(
        "trainers.py:"
    )
    assert verdict.kind == "input-bound", verdict.headline
    text = " ".join(verdict.advice)
    assert "Validation passes inside the training run" in text
    # Only the training loader's 2 workers were alive at the window's end, not the dozens that came and
    # went (each pass starts 2): no advice counts those.
    assert rank.workers_ended >= 10
    assert not re.search(r"num_workers above ([3-9]|\d\d)", text), text
    # With the GPU mostly idle it still waits for data, not "launch-bound" from the passes' forward calls
    # (an earlier 8 s recording of this job, with less of the workers' unpacking in it, read "the host
    # spends 65% of samples dispatching the model's many small kernels" before the passes were counted).
    _, on_gpu = judged(LIGHTNING, busy_percent=30.0)
    assert on_gpu.kind == "input-bound", on_gpu.headline


def test_a_job_that_only_validates_has_no_training_loop_to_hold_up() -> None:
    window = phase_window(HF, folder=TRAINERS, duration_s=12.0)
    full = summarise_window(window, phase_lines(HF, TRAINERS))
    assert full.loop_validation.share > 0  # the window trains too: the passes are counted
    validating = [
        s
        for s in window.stacks
        if any("trainer.py" in f.filename and "evaluat" in f.function for f in s.frames)
    ]
    only = summarise_window(replace(window, stacks=tuple(validating)), phase_lines(HF, TRAINERS))
    assert only.loop_validation.share == 0.0


def test_a_plain_loops_evaluate_every_n_steps_is_the_loops_work_not_its_training_loop() -> None:
    # plain_loops.py evaluate: `evaluate()` of the job's own every 20 steps, its forward passes over a
    # 2-worker loader costing more than the steps between them (session 31's j74; `xfertop run`:
    # "loop-bound: passes over another DataLoader inside the training loop (validation, about every 20
    # steps) take 68% of the time"). Before, attach took evaluate()'s loop, whose model calls outnumber
    # the training step's, for the training loop: "input-bound: 16% of each step waits".
    rank, verdict = judged("plain_evaluate_every_20", seconds=8.0)
    assert rank.loop_host.loop_line == "plain_loops.py:51", rank.loop_host
    assert rank.loop_validation.share > 0.3 and rank.loop_validation.top_lines[0][0] == "plain_loops.py:45"
    assert verdict.kind == "loop-bound", verdict.headline
    assert "(mostly validation passes)" in verdict.headline
    assert verdict.advice[0].startswith("Validation passes inside the training run (plain_loops.py:45")


def test_a_validation_loop_written_in_the_training_loops_body_is_a_pass_not_the_training_loop() -> None:
    # plain_loops.py inline: `for vx, vy in val:` in the body every 40 steps, its loader's 2 workers
    # starting at each pass; the window holds more reads of that loader than of the training one. Before,
    # its statement (line 62) was taken for the training loop; now it is a pass inside the loop at 51,
    # whose forward (line 63) is the loop's work, and the job reads input-bound as `xfertop run` reads it.
    rank, verdict = judged("plain_inline_val_every_40", seconds=8.0)
    assert rank.loop_host.loop_line == "plain_loops.py:51", rank.loop_host
    assert rank.loop_validation.share > 0.03 and rank.loop_validation.top_lines[0][0] == "plain_loops.py:63"
    assert rank.loop_tensor.share < 0.01, rank.loop_tensor  # the pass's own maths are the pass's
    assert verdict.kind == "input-bound", verdict.headline
    # Most of the wait is the passes' (their loader's workers starting and their batches unpacked), as
    # `xfertop run` says; the main thread unpacks the idle workers' batches (30% of samples), and the
    # pass's loader starts its 2 workers at each pass (14%): all named, the passes and the restarts first.
    # Before, the unpacking's advice alone, blaming "many small tensors" (a batch here holds two).
    assert "mostly in validation passes inside the training run" in verdict.headline, verdict.headline
    assert "the main thread unpacks the workers' tensors" in verdict.headline
    assert verdict.advice[0].startswith("Most of the wait is in validation passes"), verdict.advice
    assert "Set persistent_workers=True" in verdict.advice[1], verdict.advice
    assert "costs almost nothing to make" in verdict.advice[2], verdict.advice
