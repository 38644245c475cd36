"""`xfertop attach` on a real GPU job: what the CPU machine cannot show.

Run on the GPU machine: `pytest -m gpu tests/gpu/test_attach_gpu.py` (needs py-spy installed and
CUDA torch). The thresholds are first guesses: a failure says what the H200 really showed.
"""

from __future__ import annotations

import pytest

from pyspy_support import ptrace_problem, training_job
from xfertop.analysis.sampled_verdict import judge_stacks
from xfertop.sources.stacks.source import StackSampler
from xfertop.sources.stacks.source_lines import line_reader

pytestmark = pytest.mark.gpu


def sampled(*job_args: str):
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    problem = ptrace_problem()
    if problem is not None:
        pytest.skip(f"py-spy cannot attach here: {problem}")
    with training_job(*job_args, "--device", "cuda") as job:
        state = StackSampler(job.pid, window_s=3, with_ranks=False).sample_once()
    (summary,), verdict = judge_stacks(state, line_reader)
    return summary, verdict


def test_pin_memory_thread_is_found_and_its_load_shown() -> None:
    summary, verdict = sampled("starved", "--workers", "2", "--pin")
    assert summary.pin_busy_share is not None, summary.to_dict()
    assert verdict.kind == "input-bound", verdict.headline


def test_item_every_step_waits_for_the_gpu() -> None:
    summary, verdict = sampled("sync")
    assert summary.shares.share("gpu_sync") >= 0.1, (summary.to_dict(), verdict.headline)


def test_a_loop_waiting_in_item_for_a_busy_gpu_is_compute_bound() -> None:
    # ~20 ms of GPU work a step, waited for in loss.item(): the host waits for the GPU's own work and the
    # GPU for nothing. As `xfertop run` and the synchronised truth read it: compute, not "sync-bound".
    import torch

    from xfertop.cli import attach

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    problem = ptrace_problem()
    if problem is not None:
        pytest.skip(f"py-spy cannot attach here: {problem}")
    with training_job("gpu_wait", "--device", "cuda") as job:
        sampler = StackSampler(job.pid, window_s=3, with_ranks=False)
        report, error = attach.once_report(sampler, attach.gpu_reader())
    assert error is None
    (rank,) = report["ranks"]
    assert rank["gpu_busy_share"] is not None and rank["gpu_busy_share"] >= 0.7, rank
    verdict = report["verdict"]
    assert verdict["kind"] in ("compute-bound", "healthy"), verdict["headline"]
    assert "the host waiting for it in .item()-like calls" in verdict["headline"], verdict["headline"]
