"""`xfertop attach` end to end against real CPU training processes (skipped where ptrace is refused)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from pyspy_phases_support import fake_nvml_gpu, phases_job
from pyspy_support import FIXTURES, TRAIN_SCRIPT, job_under_run, ptrace_problem, training_job
from ring_test_tools import child_env
from xfertop.analysis.sampled_verdict import judge_stacks
from xfertop.cli import attach
from xfertop.sources.stacks.pyspy_runner import dump
from xfertop.sources.stacks.source import StackSampler
from xfertop.sources.stacks.source_lines import line_reader

PTRACE_PROBLEM = ptrace_problem()
needs_ptrace = pytest.mark.skipif(
    PTRACE_PROBLEM is not None, reason=f"py-spy cannot attach here: {PTRACE_PROBLEM}"
)


def wait_for_pyspy_child(timeout_s: float) -> bool:
    """Poll our own process tree until a py-spy child runs (there is no event to wait on)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(child.name() == "py-spy" for child in psutil.Process().children(recursive=True)):
            return True
        time.sleep(0.05)
    return False


def attached_report(capsys: pytest.CaptureFixture[str], *job_args: str, seconds: float = 2) -> dict:
    """train_cpu.py ``job_args`` past its warm-up, attached once for ``seconds``: the report (exit code 0)."""
    with training_job(*job_args) as job:
        code = run_attach(str(job.pid), "--once", "--json", "--seconds", str(seconds))
    assert code == 0
    return json.loads(capsys.readouterr().out)


def run_attach(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    attach.register(parser.add_subparsers())
    args = parser.parse_args(["attach", *argv])
    return args.run(args)


def once_beside_nvml(pid: int, busy_percent: float, window_s: float) -> tuple[dict, dict]:
    """`attach --once` on ``pid`` as its report gives them (its one rank, the verdict), with NVML faked:
    the job alone on a GPU ``busy_percent`` busy (this machine has no GPU)."""
    sampler = StackSampler(pid, window_s=window_s, with_ranks=False)
    report, error = attach.once_report(sampler, fake_nvml_gpu(pid, busy_percent))
    assert error is None
    (rank,) = report["ranks"]
    return rank, report["verdict"]


@needs_ptrace
def test_once_json_diagnoses_a_starved_job_with_busy_workers(capsys: pytest.CaptureFixture[str]) -> None:
    with training_job("starved", "--workers", "2") as job:
        code = run_attach(str(job.pid), "--once", "--json", "--seconds", "2")
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert report["verdict"]["kind"] == "input-bound"
    assert report["verdict"]["evidence"]["source"] == "sampled"
    (rank,) = report["ranks"]
    assert rank["pid"] == job.pid and rank["samples"] >= 50
    assert rank["data_wait_share"] + rank["main_loading_share"] > 0.7
    assert len(rank["workers"]) == 2


@needs_ptrace
def test_once_text_diagnoses_a_compute_bound_job(capsys: pytest.CaptureFixture[str]) -> None:
    with training_job("compute") as job:
        code = run_attach(str(job.pid), "--once", "--seconds", "2")
    out = capsys.readouterr().out
    assert code == 0 and out.startswith("compute-bound")
    # Its rank's line: the sample classes in words, adding up to 100 (not every *_share field of --json,
    # which overlap: "main_loading 3%, compute 94%, ..., dispatch 94%, receive 3%").
    [line] = [line for line in out.splitlines() if line.startswith(f"pid {job.pid}")]
    assert "the main thread's samples: " in line and "compute (forward/backward/optimizer) " in line, line
    assert "_" not in line.split(": ", 1)[1], line
    shares = [int(n) for n in re.findall(r"(?<![<\d])(\d+)%", line)]
    assert sum(shares) == 100, line


@needs_ptrace
def test_all_ranks_of_a_torchrun_job_are_sampled_together(capsys: pytest.CaptureFixture[str]) -> None:
    launcher = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            "2",
            str(FIXTURES / "ddp_cpu.py"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        assert launcher.stdout is not None
        ready = [launcher.stdout.readline().split() for _ in range(2)]
        pids = {int(fields[2]): int(fields[1]) for fields in ready}
        code = run_attach(str(min(pids)), "--once", "--json", "--seconds", "1")
    finally:
        launcher.terminate()
        launcher.wait(timeout=30)
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert {t["pid"]: t["rank"] for t in report["targets"]} == pids
    assert len({t["job_key"] for t in report["targets"]}) == 1
    assert {r["pid"] for r in report["ranks"]} == set(pids)


def test_a_pid_that_is_not_running_exits_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_attach("999999", "--once", "--json") == 2
    err = capsys.readouterr().err.strip()
    assert err == "xfertop attach: process 999999 is not running (no /proc/999999): check the pid."


def test_a_missing_pyspy_exits_2_and_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert run_attach("1", "--once") == 2
    assert "pip install py-spy" in capsys.readouterr().err


@needs_ptrace
def test_dump_returns_the_main_thread_of_a_live_process() -> None:
    with training_job("compute") as job:
        # --nonblocking reads the stack while the job runs: a read that meets a call being made can come
        # back short of its outer frames (CI at fa9803f: a main thread ending in Optimizer.zero_grad).
        # Every dump has one main thread; not every one is whole.
        dumps = [dump(job.pid) for _ in range(5)]
    mains = [[s for s in stacks if s.is_main_thread] for stacks in dumps]
    assert all(len(main) == 1 for main in mains), mains
    assert any(main[0].frames[-1].name == "<module>" for main in mains), mains


@needs_ptrace
def test_stopping_the_sampler_does_not_wait_out_a_long_window() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        sampler = StackSampler(child.pid, window_s=60, with_ranks=False)
        sampler.start()
        assert wait_for_pyspy_child(timeout_s=10), "the sampler never started py-spy"
        started = time.monotonic()
        sampler.stop(timeout_s=10)
        assert time.monotonic() - started < 5
        assert sampler._thread is not None and not sampler._thread.is_alive()
    finally:
        child.kill()
        child.wait()


@needs_ptrace
def test_workers_confined_to_one_core_are_not_told_to_multiply(capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 11: "Eight workers confined to one core got 'Raise num_workers'": the advice must rest on
    # where the workers may run, which attach reads from /proc around its window.
    report = attached_report(capsys, "starved", "--workers", "2", "--confine")
    verdict = report["verdict"]
    assert verdict["kind"] == "input-bound", verdict["headline"]
    (rank,) = report["ranks"]
    assert len(rank["workers_allowed_cpus"]) == 1
    advice = " ".join(verdict["advice"])
    assert "CPU affinity" in advice and "Raise num_workers" not in advice, advice


@needs_ptrace
def test_workers_restarted_every_epoch_get_persistent_workers(capsys: pytest.CaptureFixture[str]) -> None:
    with training_job("starved", "--workers", "2", "--epoch-steps", "4") as job:
        code = run_attach(str(job.pid), "--once", "--json", "--seconds", "3")
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    (rank,) = report["ranks"]
    assert rank["workers_ended"] > 0
    verdict = report["verdict"]
    assert verdict["kind"] == "input-bound", verdict["headline"]
    advice = " ".join(verdict["advice"])
    assert "persistent_workers=True" in advice and "Raise num_workers" not in advice, advice


@needs_ptrace
def test_a_slow_sampler_is_named_and_more_workers_are_not_advised(capsys: pytest.CaptureFixture[str]) -> None:
    # The sampler runs in the main process inside next(): the wait is the loop's own thread drawing
    # indices, which neither more workers nor cheaper samples shorten.
    report = attached_report(capsys, "sampler", "--workers", "2")
    (rank,) = report["ranks"]
    assert rank["sampler_share"] >= 0.3 and rank["sampler_lines"][0][0].startswith("train_cpu.py:"), rank
    verdict = report["verdict"]
    assert verdict["kind"] == "input-bound" and "sampler" in verdict["headline"], verdict["headline"]
    advice = " ".join(verdict["advice"])
    assert "train_cpu.py:" in advice and "torch.multinomial" in advice, advice
    assert "Raise num_workers" not in advice and "cannot help" in advice, advice


@needs_ptrace
def test_a_training_loop_on_a_thread_of_its_own_is_the_one_sampled(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The main thread waits in join() the whole time: judged on it, the job was "not in the training
    # loop yet" for as long as it ran.
    report = attached_report(capsys, "starved", "--workers", "2", "--thread")
    (rank,) = report["ranks"]
    assert rank["loop_thread"] == "trainer" and rank["loop_seen"], rank
    assert report["verdict"]["kind"] == "input-bound", report["verdict"]["headline"]


@needs_ptrace
def test_a_new_iterator_every_step_is_named_not_persistent_workers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # persistent_workers=True would still reset the workers and waste their prefetch every step.
    report = attached_report(capsys, "new_iterator", "--workers", "1")
    (rank,) = report["ranks"]
    assert (rank["new_iterator_line"] or "").startswith("train_cpu.py:"), rank
    verdict = report["verdict"]
    assert verdict["kind"] == "input-bound", verdict["headline"]
    advice = " ".join(verdict["advice"])
    assert "Make the iterator once" in advice and rank["new_iterator_line"] in advice, advice
    assert "persistent_workers" not in advice, advice


@needs_ptrace
def test_a_loop_waiting_for_a_thread_pools_futures_waits_for_data(capsys: pytest.CaptureFixture[str]) -> None:
    # Read as the loop's own Python ("loop-bound ... bookkeeping") before futures counted as a producer.
    # The model holds ~5% of the samples beside the wait: 4 s of them (200) always catch it, where 2 s
    # missed it in one CI run of sixteen ("not in the training loop yet": no model call seen).
    report = attached_report(capsys, "futures", seconds=4)
    verdict = report["verdict"]
    assert verdict["kind"] == "input-bound", verdict["headline"]
    assert "waits in a future's result() for its batches" in verdict["headline"], verdict["headline"]
    assert "num_workers" not in verdict["headline"] and verdict["advice"][0].startswith("The producer")


@needs_ptrace
def test_a_launcher_is_judged_on_the_child_that_trains(capsys: pytest.CaptureFixture[str]) -> None:
    # torch.multiprocessing.spawn: the attached script only waits in join(); its child runs the loop.
    with training_job("starved", "--workers", "2", "--spawned") as job:
        code = run_attach(str(job.pid), "--once", "--json", "--seconds", "2")
        under = {p.pid for p in psutil.Process(job.pid).children(recursive=True)}
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    (rank,) = report["ranks"]
    assert rank["loop_process"] in under, (rank, under)
    assert report["verdict"]["kind"] == "input-bound", report["verdict"]["headline"]
    assert len(rank["workers"]) >= 2, rank  # the child's workers, not the child itself


@needs_ptrace
def test_batches_of_many_small_tensors_are_named_as_the_transfer(capsys: pytest.CaptureFixture[str]) -> None:
    # The workers idle while the main thread rebuilds each tensor from its own handle: neither more
    # workers nor cheaper samples help; fewer, larger tensors do.
    report = attached_report(capsys, "tensor_lists", "--workers", "2")
    (rank,) = report["ranks"]
    assert rank["receive_share"] >= 0.3, rank
    verdict = report["verdict"]
    assert verdict["kind"] == "input-bound" and "unpacks the workers' tensors" in verdict["headline"], verdict
    advice = " ".join(verdict["advice"])
    assert "stack or pad in collate_fn" in advice and "Raise num_workers" not in advice, advice


@needs_ptrace
def test_time_between_the_loaders_passes_is_loop_bound_as_run_reads_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Read "not in a training loop: ... mostly in evaluate_and_upload" before (run: loop-bound).
    report = attached_report(capsys, "between_passes")
    (rank,) = report["ranks"]
    assert rank["between_passes_share"] >= 0.5, json.dumps(rank)
    verdict = report["verdict"]
    assert verdict["kind"] == "loop-bound" and "between the loader's iterations" in verdict["headline"]
    assert "train_cpu.py:" in verdict["headline"], verdict["headline"]


@needs_ptrace
def test_the_loops_own_python_bookkeeping_is_measured_and_named(capsys: pytest.CaptureFixture[str]) -> None:
    # A CPU job whose loop's own Python holds more of the cores than the model: loop-bound, as `xfertop
    # run` reads it, with the lines named; the samples are not "outside a training loop".
    report = attached_report(capsys, "bookkeeping")
    (rank,) = report["ranks"]
    assert rank["loop_host_share"] >= 0.3, rank
    assert rank["loop_host_lines"][0][0].startswith("train_cpu.py:")
    assert report["verdict"]["kind"] == "loop-bound", (report["verdict"]["headline"], rank)
    advice = " ".join(report["verdict"]["advice"])
    assert "train_cpu.py:" in advice and "every N steps" in advice, advice
    assert "GPU" not in advice, advice  # a CPU job: no GPU to move it to or to wait for


THROTTLED = """
import time
import torch


class SlowBackward(torch.autograd.Function):  # a model whose backward holds the step, as most do
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        began = time.perf_counter()
        while time.perf_counter() - began < 0.015:
            pass
        return grad


model = torch.nn.Linear(64, 8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
batches = [torch.randn(32, 64) for _ in range(16)]  # no DataLoader: the loop is found by its model


def throttle():  # a rate limiter: about as long as the step
    time.sleep(0.015)


step = 0
while True:
    for x in batches:
        SlowBackward.apply(model(x)).pow(2).mean().backward()
        optimizer.step()
        optimizer.zero_grad()
        throttle()
        step += 1
        if step == 5:
            print("ready", flush=True)
"""


@needs_ptrace
def test_a_job_under_xfertop_run_is_read_as_the_same_job_run_plainly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `xfertop run`'s hooks sit between the loop and next(loader), backward() and .item(). From a checkout
    # (pip install -e: not under site-packages) their frames read as the job's own code: backward()'s
    # caller was the hook, which took the loop's place, and a sleep after the optimizer step read
    # "healthy: 54% of samples are outside the training phases" where the same job run plainly read
    # loop-bound (session 48's trial: a rate limiter; here the loop is found by its model alone).
    script = tmp_path / "throttled.py"
    script.write_text(THROTTLED)
    with job_under_run(tmp_path / "rings", script) as pid:
        code = run_attach(str(pid), "--once", "--json", "--seconds", "2")
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    (rank,) = report["ranks"]
    assert rank["loop_host_share"] >= 0.2, rank
    assert rank["loop_host_lines"][0][0] == "throttled.py:34", rank["loop_host_lines"]
    assert report["verdict"]["kind"] == "loop-bound", (report["verdict"]["headline"], rank)
    assert "_step_parts.py" not in json.dumps(report) and "reporter" not in json.dumps(report), report


@needs_ptrace
def test_on_a_gpu_the_loops_own_python_bookkeeping_is_host_bound() -> None:
    # The real job and sampler; only "it is a CUDA process" is set by hand (the hardware boundary).
    with training_job("bookkeeping") as job:
        sampler = StackSampler(job.pid, window_s=2, with_ranks=False)
        state = sampler.sample_once()
    (window,) = state.windows
    assert window.placement is not None and window.placement.uses_cuda is False
    on_gpu = dataclasses.replace(window, placement=dataclasses.replace(window.placement, uses_cuda=True))
    _, verdict = judge_stacks(dataclasses.replace(state, windows=(on_gpu,)), line_reader)
    assert verdict.kind == "host-bound", verdict.headline
    assert "training loop's own Python code" in verdict.headline
    advice = " ".join(verdict.advice)
    assert "train_cpu.py:" in advice and "every N steps" in advice


@needs_ptrace
def test_persistent_workers_under_a_forkserver_are_not_restarts(capsys: pytest.CaptureFixture[str]) -> None:
    # Python 3.14's default start method on Linux: the workers are the forkserver's children, not the
    # training process's; py-spy still samples them.
    report = attached_report(capsys, "starved", "--workers", "2", "--start-method", "forkserver")
    (rank,) = report["ranks"]
    assert len(rank["workers"]) == 2 and rank["workers_ended"] == 0
    assert len(rank["workers_allowed_cpus"]) >= 1
    assert "persistent_workers" not in " ".join(report["verdict"]["advice"])


@needs_ptrace
def test_a_job_still_building_its_data_gets_no_verdict_but_where_it_is(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # H200: attached seconds after launch, while the job built its tensors: "compute-bound: compute is 99%".
    with phases_job("setup") as job:
        code = run_attach(str(job.pid), "--once", "--json", "--seconds", "2")
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    verdict = report["verdict"]
    assert verdict["kind"] == "warming-up" and verdict["rule"] == "not-in-loop-yet", verdict["headline"]
    assert "building data in make_dataset (train_phases.py:" in verdict["headline"], verdict["headline"]
    (rank,) = report["ranks"]
    assert rank["loop_seen"] is False and rank["compute_share"] == 0.0, rank


@needs_ptrace
def test_attach_reads_the_gpus_busy_share_while_it_samples_and_names_the_loops_lines() -> None:
    # A loop that augments its batches with tensor maths on CPU tensors; NVML (faked: this machine has
    # no GPU) lists the job alone on its GPU, 1% busy. The job, py-spy and the analysis are real.
    with phases_job("augment") as job:
        rank, verdict = once_beside_nvml(job.pid, busy_percent=1, window_s=2)
    assert rank["gpu_busy_share"] == 0.01, rank
    assert verdict["kind"] == "loop-bound" and verdict["rule"] == "loop-bound", verdict["headline"]
    assert "while the GPU is busy 1%" in verdict["headline"]
    assert "train_phases.py:6" in verdict["advice"][0], verdict["advice"]


@needs_ptrace
def test_a_loop_waiting_in_item_for_a_busy_gpu_is_not_sync_bound() -> None:
    # The CPU stand-in for a loop blocked in .item() (about half its samples), NVML (faked) listing it
    # alone on a GPU 96% busy: the host waits for the GPU's own work, which `xfertop run` and the
    # synchronised truth count as compute. Before: "sync-bound ... log every N steps".
    with training_job("native_sync") as job:
        rank, verdict = once_beside_nvml(job.pid, busy_percent=96, window_s=3)
    assert rank["gpu_busy_share"] == 0.96 and rank["gpu_sync_share"] >= 0.3, rank
    assert verdict["kind"] in ("compute-bound", "healthy"), verdict["headline"]
    assert "the GPU is busy 96%, the host waiting for it in .item()-like calls in" in verdict["headline"]


@needs_ptrace
def test_an_optimizer_stepping_host_memory_is_named_in_the_launch_bound_verdict() -> None:
    # An AdamW over 4M parameters in host memory beside a small model (an offloaded optimizer, as ZeRO-
    # Offload's), NVML (faked) listing the job alone on a GPU 3% busy. On the H200 attach read such a job
    # (session 34's j85) "dispatching the model's many small kernels": the optimizer's step it is.
    with training_job("offload_optimizer") as job:
        rank, verdict = once_beside_nvml(job.pid, busy_percent=3, window_s=2)
    assert rank["optimizer_share"] >= 0.75 * rank["dispatch_share"] > 0, rank
    assert verdict["kind"] == "launch-bound", verdict["headline"]
    assert "samples in the optimizer's step" in verdict["headline"], verdict["headline"]
    assert verdict["advice"][0].startswith("A foreach or fused optimizer"), verdict["advice"]
    assert "If the optimizer's parameters are in host memory" in verdict["advice"][1], verdict["advice"]


@needs_ptrace
def test_a_model_of_many_small_layers_stays_the_models_dispatch() -> None:
    # The contrast: a model step whose time is the model's calls, not the optimizer's (SGD over a
    # four-layer 2048-wide model): the headline names the model's kernels.
    with training_job("compute") as job:
        rank, verdict = once_beside_nvml(job.pid, busy_percent=3, window_s=2)
    assert rank["optimizer_share"] < 0.75 * rank["dispatch_share"], rank
    assert verdict["kind"] == "launch-bound", verdict["headline"]
    assert "dispatching the model's many small kernels" in verdict["headline"], verdict["headline"]


def run_then_attach(tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str) -> tuple[dict, str, dict]:
    """train_cpu.py ``mode`` under the real `xfertop run` for 300 steps (its summary's last verdict and its
    stderr), then a plain one attached for 2 s (the report): one job read by both."""
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "xfertop.cli.run",
            "--",
            sys.executable,
            str(TRAIN_SCRIPT),
            mode,
            "--steps",
            "300",
        ],
        env=child_env(tmp_path / "rings"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    (summary_file,) = (tmp_path / "rings" / "summaries").glob("*.json")
    run_verdict = json.loads(summary_file.read_text())["last_verdict"]
    with training_job(mode) as job:
        code = run_attach(str(job.pid), "--once", "--json", "--seconds", "2")
    assert code == 0
    return run_verdict, run.stderr, json.loads(capsys.readouterr().out)


@needs_ptrace
def test_a_loop_that_checkpoints_often_reads_as_xfertop_run_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # One job (torch.save of a 16 MB state every 4 steps, ~10x its model step) under `xfertop run` and
    # under attach: both loop-bound, both naming the checkpoints and their remedy. Before, attach read
    # "not in a training loop" (a checkpoint in the loop's body counted as outside the loop) and run
    # gave the bookkeeping's advice (logging, metrics) for the checkpoints' time.
    run_verdict, _, report = run_then_attach(tmp_path, capsys, "checkpoint")
    assert run_verdict["kind"] == "loop-bound", run_verdict["headline"]
    assert "saving checkpoints" in run_verdict["headline"], run_verdict["headline"]
    assert run_verdict["advice"][0].startswith("torch.save ran in"), run_verdict["advice"]
    (rank,) = report["ranks"]
    verdict = report["verdict"]
    assert verdict["kind"] == run_verdict["kind"], (verdict["headline"], rank)
    assert "mostly saving checkpoints" in verdict["headline"], verdict["headline"]
    assert verdict["advice"][0].startswith("Checkpoints the loop writes (torch.save; train_cpu.py:"), verdict
    assert "checkpoint less often" in verdict["advice"][0]


@needs_ptrace
def test_a_loop_that_tokenises_before_the_model_reads_as_xfertop_run_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Captions tokenised in Python in the loop's body before the model (~2x its step). `xfertop run`
    # reads the loop's own work before the model and advises the Dataset; attach read the same kind but
    # called the lines "per-step bookkeeping (metrics, confusion counts, logging) ... every N steps"
    # (session 44's CPU trial of a JPEG-and-captions job).
    run_verdict, _, report = run_then_attach(tmp_path, capsys, "tokenise")
    assert run_verdict["kind"] == "loop-bound", run_verdict["headline"]
    assert "before the model" in run_verdict["headline"], run_verdict["headline"]
    (rank,) = report["ranks"]
    verdict = report["verdict"]
    assert verdict["kind"] == run_verdict["kind"], (verdict["headline"], rank)
    assert rank["loop_host_before_model"] is True, json.dumps(rank)
    assert "the loop's own code before the model" in verdict["headline"], verdict["headline"]
    advice = " ".join(verdict["advice"])
    assert "__getitem__" in advice and "bookkeeping" not in advice, advice


@needs_ptrace
def test_a_loop_fed_by_its_own_generator_reads_as_xfertop_run_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # No DataLoader: a Python generator builds each batch in the main thread (~3x the model step). Under
    # `xfertop run` that is the loop's own work before the model (steps from the optimizer, no samples
    # counted); attach reads the same kind and names the generator's lines. Before, attach read "not in
    # a training loop ... mostly in python_batches", run advised a DataLoader's workers it does not have
    # as if it had one, and its summary said "0.0 samples/s".
    run_verdict, run_stderr, report = run_then_attach(tmp_path, capsys, "generator")
    assert "samples/s not known (no DataLoader batch counted)" in run_stderr, run_stderr
    assert run_verdict["kind"] == "loop-bound", run_verdict["headline"]
    assert "with no DataLoader read" in run_verdict["advice"][0], run_verdict["advice"]
    assert "read through a DataLoader with workers" in run_verdict["advice"][0]
    (rank,) = report["ranks"]
    verdict = report["verdict"]
    assert verdict["kind"] == run_verdict["kind"], (verdict["headline"], rank)
    assert "mostly building batches in its own iterable" in verdict["headline"], verdict["headline"]
    assert verdict["advice"][0].startswith("The loop's own iterable (the loop at train_cpu.py:"), verdict
    assert rank["loop_iterable_lines"][0][0].startswith("train_cpu.py:"), rank


@needs_ptrace
def test_an_ema_after_the_step_through_a_progress_generator_reads_as_xfertop_run_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The loader read through a progress generator of the job's own (py-spy shows no frame beyond a
    # generator's, so the loader's caller is never on the way to the model), and an EMA of the weights
    # after every optimizer step, several times the model step. `xfertop run` reads loop-bound (the
    # loop's work after the step); attach now reads the same, naming the EMA's line as tensor maths after
    # the model. Before, attach took the generator's loop for the training loop: "healthy ... 25% of
    # samples are outside the training phases" (and below 30% of samples, loop work on a CPU was compute).
    run_verdict, _, report = run_then_attach(tmp_path, capsys, "ema")
    assert run_verdict["kind"] == "loop-bound" and "after the step" in run_verdict["headline"], run_verdict
    (rank,) = report["ranks"]
    verdict = report["verdict"]
    assert verdict["kind"] == run_verdict["kind"], (verdict["headline"], rank)
    assert rank["loop_tensor_after_model"] is True, json.dumps(rank)
    assert verdict["advice"][0].startswith(
        "Most of it is tensor maths on the loop's own lines after the model"
    ), verdict["advice"]


@needs_ptrace
def test_a_loss_written_in_the_loop_is_the_model_step_as_xfertop_run_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The loss computed on the loop's own lines between the model's call and backward (a contrastive
    # loss against a bank), several times the model's forward and backward: backward runs through it, and
    # `xfertop run` counts it in the model step (compute-bound). Session 28's j34 (a contrastive loss
    # outside any module) read compute-bound 95% under run, attach "loop-bound: the loop's own code holds
    # the main thread 26% of samples".
    run_verdict, _, report = run_then_attach(tmp_path, capsys, "loss_maths")
    assert run_verdict["kind"] == "compute-bound", run_verdict
    (rank,) = report["ranks"]
    verdict = report["verdict"]
    assert verdict["kind"] == run_verdict["kind"], (verdict["headline"], rank)
    assert rank["loop_tensor_share"] < 0.1, rank
