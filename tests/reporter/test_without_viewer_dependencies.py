"""The two-line `xfertop.watch` needs only the reporter in the training environment: installed there with
`pip install --no-deps xfertop`, none of the viewer's dependencies (textual, rich, pynvml, psutil,
prometheus_client) exist, and training is still measured.

The training process runs with an import blocker first on its path (a sitecustomize that puts a finder at
the head of sys.meta_path): those packages then fail to import exactly as if they were not installed, and
every attempt is counted. The same environment's torch stays importable, which a fresh environment made
with `--no-deps` could not offer here without a second torch.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from ring_test_tools import child_env
from xfertop.sources.jobs.source import JobsSource

VIEWER_DEPENDENCIES = ("textual", "rich", "pynvml", "psutil", "prometheus_client")

# Each attempt is kept with the file that asked (torch itself asks for pynvml when torch.cuda loads).
BLOCKER = f"""
import importlib.abc, sys

BLOCKED = {VIEWER_DEPENDENCIES!r}
attempts = []

def _importer():
    frame = sys._getframe(2)
    while frame is not None and (frame.f_code.co_filename.startswith("<frozen")
                                 or "importlib" in frame.f_code.co_filename):
        frame = frame.f_back
    return frame.f_code.co_filename if frame is not None else "?"

class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname.split(".")[0] in BLOCKED:
            attempts.append((fullname, _importer()))
            raise ModuleNotFoundError(f"No module named {{fullname!r}}", name=fullname)
        return None

sys.meta_path.insert(0, NotInstalled())
sys.modules["viewer_dependency_blocker"] = sys.modules[__name__]
"""

TRAIN = """
import sys
import torch
from torch.utils.data import DataLoader, TensorDataset

import xfertop

loader = DataLoader(TensorDataset(torch.ones(64, 4)), batch_size=8, num_workers=2)
for (batch,) in xfertop.watch(loader):
    batch = xfertop.to_device(batch, "cpu")
    (batch * 2).sum()
for _ in range(3):
    with xfertop.step():
        pass
try:
    import psutil  # noqa: F401
except ModuleNotFoundError:
    print("psutil is not installed here", flush=True)
blocker = sys.modules["viewer_dependency_blocker"]
xfertop_dir = xfertop.__file__.rsplit("/", 1)[0]
print("viewer packages asked for by xfertop:", [name for name, importer in blocker.attempts
                                                if importer.startswith(xfertop_dir)])
loaded = sorted(name for name in sys.modules if name.split(".")[0] in blocker.BLOCKED)
print("viewer packages loaded:", loaded)
print("reporter status:", xfertop.reporter.status()["disabled"], flush=True)
"""


def test_watch_measures_training_where_the_viewers_packages_are_not_installed(tmp_path: Path) -> None:
    blocker_dir = tmp_path / "blocker"
    blocker_dir.mkdir()
    (blocker_dir / "sitecustomize.py").write_text(textwrap.dedent(BLOCKER))
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(TRAIN))
    env = child_env(tmp_path / "rings")
    env["PYTHONPATH"] = str(blocker_dir) + os.pathsep + env["PYTHONPATH"]
    result = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "psutil is not installed here",  # the blocker works: the job cannot import it
        "viewer packages asked for by xfertop: []",
        "viewer packages loaded: []",
        "reporter status: False",
    ], result.stderr
    [job] = JobsSource(ring_dir=str(tmp_path / "rings")).sample_once().jobs
    [rank] = job.ranks
    assert len(rank.steps) == 8 + 3
    assert all(step.samples == 8 for step in rank.steps[:8])
    assert rank.end is not None and rank.end.closed_ring
