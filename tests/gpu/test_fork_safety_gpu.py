"""On a real GPU: DataLoader workers forked after GPU-timed steps leave the job as it runs without xfertop.

The issue's reproduction: a CUDA job whose loader (num_workers=2, persistent_workers=False,
pin_memory=True) forks new workers every epoch, plus a validation loader, under `xfertop run`,
`xfertop run --no-copy-timing` and `xfertop.watch`, against the plain run's exit code and output.
Run on the GPU machine: ``pytest -m gpu tests/gpu/test_fork_safety_gpu.py``. The same shape on the fake
CUDA, in CI: tests/reporter/test_fork_safety.py.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from ring_test_tools import child_env

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

JOB = """
import sys, torch
from torch.utils.data import DataLoader, TensorDataset
watch = sys.argv[1] == "watch"
if watch:
    import xfertop
torch.manual_seed(0)
ds = TensorDataset(torch.randn(64, 256), torch.randint(0, 10, (64,)))
dl = DataLoader(ds, batch_size=16, num_workers=2, persistent_workers=False, pin_memory=True)
val = DataLoader(ds, batch_size=32, num_workers=2, persistent_workers=False)
m = torch.nn.Linear(256, 10).cuda(); opt = torch.optim.SGD(m.parameters(), lr=0.1)
n = 0
for epoch in range(4):
    for x, y in (xfertop.watch(dl) if watch else dl):
        x = x.cuda(non_blocking=True); y = y.cuda(non_blocking=True)
        loss = torch.nn.functional.cross_entropy(m(x), y)
        opt.zero_grad(); loss.backward(); opt.step(); n += 1
    with torch.no_grad():
        v = sum(torch.nn.functional.cross_entropy(m(x.cuda()), y.cuda()).item() for x, y in val)
    print(f"epoch {epoch} val {v:.4f}", flush=True)
torch.cuda.synchronize(); print("done steps", n)
if watch:
    print(repr(xfertop.reporter.status()), file=sys.stderr)
"""
RUN = [sys.executable, "-m", "xfertop.cli.run"]
LAUNCHERS = {
    "xfertop run": [*RUN, "--"],
    "xfertop run --no-copy-timing": [*RUN, "--no-copy-timing", "--"],
    "xfertop.watch": [],
}


def _job(tmp_path: Path, launcher: list[str], mode: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "repro.py"
    script.write_text(JOB)
    return subprocess.run(
        [*launcher, sys.executable, str(script), mode],
        env=child_env(tmp_path / "rings"),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("how", LAUNCHERS)
def test_the_issue_reproduction_runs_as_it_does_without_xfertop(how: str, tmp_path: Path) -> None:
    plain = _job(tmp_path, [], "plain")
    assert plain.returncode == 0, plain.stderr
    assert "done steps 16" in plain.stdout

    watched = _job(tmp_path, LAUNCHERS[how], "watch" if how == "xfertop.watch" else "plain")

    assert "terminate called" not in watched.stderr
    assert "exited unexpectedly" not in watched.stderr
    assert (watched.returncode, watched.stdout) == (plain.returncode, plain.stdout), watched.stderr
    if how == "xfertop.watch":  # the GPU clock really ran before the later epochs forked their workers
        status = ast.literal_eval(watched.stderr.strip().splitlines()[-1])
        assert status["device"] == "cuda:0"
        assert status["gpu_timed_steps"] > 0
