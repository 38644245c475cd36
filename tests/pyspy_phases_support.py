"""Shared by the attach tests of a job's phases: the recorded windows of train_phases.py (set-up, CPU
augmentation in the loop, many tiny layers), the job itself to attach to, and NVML's answers about its GPU
(the fake of tests/fakes, the hardware boundary)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

from fakes.fake_pynvml import FakePynvml
from xfertop.analysis.stack_classify import LineText
from xfertop.model.gpu import GpuState
from xfertop.model.stacks import ChildPlacement, StackWindow, WindowPlacement
from xfertop.sources.gpu.nvml_api import NvmlApi
from xfertop.sources.gpu.source import GpuSource
from xfertop.sources.stacks.pyspy_output import parse_raw

PHASES = Path(__file__).resolve().parent / "fixtures" / "pyspy_phases"
PHASES_SCRIPT = PHASES / "train_phases.py"
#: Trainers that validate inside their training loop (fixtures/pyspy_trainers/README.md).
TRAINERS = PHASES.parent / "pyspy_trainers"


def phase_window(
    name: str,
    started_at: float = 0.0,
    uses_cuda: bool | None = None,
    folder: Path = PHASES,
    duration_s: float = 3.0,
) -> StackWindow:
    """A recorded window of train_phases.py (fixtures/pyspy_phases/README.md), or of another folder's job;
    ``uses_cuda`` is what /proc/PID/maps would say of a CUDA process (None: not read, as recorded)."""
    stacks, commands = parse_raw((folder / f"{name}.raw").read_text())
    placement = None if uses_cuda is None else WindowPlacement((), (), uses_cuda=uses_cuda)
    recorded = folder / f"{name}.placement.json"  # the descendants alive at the window's end, if recorded
    if recorded.exists():
        children = tuple(
            ChildPlacement(child["pid"], tuple(child["allowed_cpus"]))
            for child in json.loads(recorded.read_text())
        )
        placement = WindowPlacement(children, (), uses_cuda=uses_cuda)
    return StackWindow(
        root_pid=min(commands),
        started_at=started_at,
        duration_s=duration_s,
        rate_hz=50,
        stacks=stacks,
        commands=commands,
        placement=placement,
    )


def phase_lines(name: str, folder: Path = PHASES) -> LineText:
    """The source lines read from the job while it was recorded (its script whole, with indentation)."""
    lines = json.loads((folder / f"{name}.lines.json").read_text())
    return lambda filename, line: lines.get(f"{filename}:{line}", "")


def fake_nvml_gpu(pid: int, busy_percent: float, others: tuple[int, ...] = ()) -> GpuSource:
    """A GPU source over one faked H200 that lists ``pid`` (and ``others``) as its processes and answers
    ``busy_percent`` for its utilisation; no PCIe measurement, as attach reads it."""
    nvml = FakePynvml.h200s(1)
    nvml.gpus[0].answers["nvmlDeviceGetUtilizationRates"] = SimpleNamespace(gpu=busy_percent, memory=0)
    nvml.gpus[0].processes.extend(SimpleNamespace(pid=p, usedGpuMemory=2 * 10**9) for p in (pid, *others))
    return GpuSource(interval_s=0.1, api=NvmlApi(lib=nvml), first_window_s=0.0, pcie="off")


def nvml_readings(
    pid: int, busy_percent: float, others: tuple[int, ...] = (), count: int = 3
) -> list[GpuState]:
    """``count`` snapshots of that GPU, taken now."""
    source = fake_nvml_gpu(pid, busy_percent, others)
    try:
        return [source.sample_once() for _ in range(count)]
    finally:
        source.stop()


@contextmanager
def phases_job(*args: str) -> Iterator[subprocess.Popen[str]]:
    """train_phases.py running, past its first line ("setup" as it starts building its data, "ready"
    after its first steps); killed with everything it started on exit."""
    job = subprocess.Popen(
        [sys.executable, str(PHASES_SCRIPT), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        assert job.stdout is not None
        assert job.stdout.readline().strip() in ("setup", "ready"), "train_phases.py exited early"
        yield job
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(job.pid, signal.SIGKILL)
        job.wait()
