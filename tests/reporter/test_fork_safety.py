"""A forked child never releases, touches or finalises a CUDA object it inherited.

DataLoader workers are forked at every ``iter(loader)`` when ``persistent_workers=False``: each epoch,
each validation pass, long after the reporter has timed steps on the GPU. On the H200 a worker that
finalised an inherited ``torch.cuda.Event`` aborted, and the job died at its second epoch with
"DataLoader worker (pid ...) exited unexpectedly". Here the GPU clock runs on the fake CUDA, whose events
abort a forked child that uses or frees them, as the real ones do; the job is a real CPU training loop
with two loaders whose workers are forked again every epoch, under each way xfertop can watch it.
The same job on a real GPU: tests/gpu/test_reporter_gpu.py.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ring_test_tools import child_env

TESTS_DIR = str(Path(__file__).resolve().parents[1])

JOB = """
import os, sys
import torch
from torch.utils.data import DataLoader, TensorDataset

mode = sys.argv[1]
watched = mode != "plain"
if watched:
    import importlib
    import xfertop
    from fakes.fake_cuda import FakeCuda

    fake = FakeCuda()  # the hardware boundary: the GPU clock's events live on the fake CUDA
    clock_module = importlib.import_module("xfertop.reporter._gpu_gap")  # where the GPU clock makes its timer
    real_timer = clock_module.GpuTimer
    clock_module.GpuTimer = lambda torch_module, index, **kw: real_timer(fake, index, **kw)

torch.manual_seed(0)
train = TensorDataset(torch.randn(96, 32), torch.randint(0, 4, (96,)))
val = TensorDataset(torch.randn(32, 32), torch.randint(0, 4, (32,)))
loader_options = dict(num_workers=2, persistent_workers=False, multiprocessing_context="fork")
train_loader = DataLoader(train, batch_size=16, **loader_options)
val_loader = DataLoader(val, batch_size=16, **loader_options)
model = torch.nn.Linear(32, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def batches(loader):
    return xfertop.watch(loader) if mode == "watch" else loader


steps = 0
for epoch in range(3):
    for x, y in batches(train_loader):
        x, y = x.to("cpu"), y.to("cpu")
        if watched:
            xfertop.mark_copied("cuda:0")  # what a job that copies by hand to the GPU calls
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        steps += 1
    with torch.no_grad():
        val_loss = sum(torch.nn.functional.cross_entropy(model(x), y).item() for x, y in batches(val_loader))
    print(f"epoch {epoch} val {val_loss:.6f}", flush=True)
print("done steps", steps, flush=True)
if watched:
    print(repr(xfertop.reporter.status()), file=sys.stderr)
"""

RUN = [sys.executable, "-m", "xfertop.cli.run", "--no-summary"]  # the job's last stderr line is read
MODES = {
    "xfertop run": [*RUN, "--"],
    "xfertop run --no-copy-timing": [*RUN, "--no-copy-timing", "--"],
    "xfertop.watch": [],
}


def _run_job(tmp_path: Path, launcher: list[str], mode: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "train.py"
    script.write_text(JOB)
    env = child_env(tmp_path / "rings", XFERTOP_GPU_SAMPLING="off")  # every step on the GPU clock
    env["PYTHONPATH"] += os.pathsep + TESTS_DIR
    return subprocess.run(
        [*launcher, sys.executable, str(script), mode], env=env, capture_output=True, text=True, timeout=240
    )


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    return _run_job(tmp_path_factory.mktemp("plain"), [], "plain")


@pytest.mark.parametrize("how", MODES)
def test_workers_forked_after_gpu_timed_steps_leave_the_job_as_it_was(
    how: str, plain: subprocess.CompletedProcess[str], tmp_path: Path
) -> None:
    assert plain.returncode == 0, plain.stderr
    assert "done steps 18" in plain.stdout

    watched = _run_job(tmp_path, MODES[how], "watch" if how == "xfertop.watch" else "run")

    assert "exited unexpectedly" not in watched.stderr
    assert "terminate called" not in watched.stderr
    assert (watched.returncode, watched.stdout) == (plain.returncode, plain.stdout), watched.stderr
    status = ast.literal_eval(watched.stderr.strip().splitlines()[-1])
    # The GPU clock really ran before the later epochs forked their workers: the test can fail.
    assert status["device"] == "cuda:0"
    assert status["steps"] >= 17
    assert status["gpu_timed_steps"] >= 17
    assert status["errors"] == 0


def test_a_forked_child_that_exits_through_python_shutdown_frees_no_inherited_event(tmp_path: Path) -> None:
    # Not a DataLoader worker (those end with os._exit): a plain os.fork() whose child returns normally,
    # so the interpreter clears every module at shutdown. The inherited events must outlive that too.
    code = """
import os, sys
import importlib
import xfertop
from fakes.fake_cuda import FakeCuda

fake = FakeCuda()
clock_module = importlib.import_module("xfertop.reporter._gpu_gap")
real_timer = clock_module.GpuTimer
clock_module.GpuTimer = lambda torch_module, index, **kw: real_timer(fake, index, **kw)
import torch
for _ in xfertop.watch(range(40)):
    xfertop.mark_copied("cuda:0")
assert xfertop.reporter.status()["gpu_timed_steps"] > 0
pid = os.fork()
if pid == 0:
    for _ in xfertop.watch(range(5)):  # the child's own loop, on a clock of its own
        pass
    sys.exit(3)
_, status = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(status))
"""
    script = tmp_path / "fork_and_exit.py"
    script.write_text(code)
    env = child_env(tmp_path / "rings")
    env["PYTHONPATH"] += os.pathsep + TESTS_DIR
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["child", "3"], done.stderr
