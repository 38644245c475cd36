"""Shared helpers for tests that run real training processes writing real rings."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from xfertop import wire
from xfertop.model.jobs import JobsState, RankState
from xfertop.reporter._ring_writer import RingWriter
from xfertop.sources.jobs.source import JobsSource

T = TypeVar("T")
SRC_DIR = str(Path(__file__).resolve().parents[1] / "src")


def wait_until(check: Callable[[], T | None], timeout_s: float, what: str, every_s: float = 0.02) -> T:
    """Poll ``check`` until it returns something truthy; fail with ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(every_s)


def write_step(
    writer: RingWriter,
    step: int,
    start_ns: int,
    wall_ns: int,
    data_wait_ns: int = 0,
    copy_cpu_ns: int = 0,
    h2d_bytes: int = 0,
    samples: int = 0,
    flags: int = 0,
    *,
    loop_pre_ns: int = 0,
    sync_ns: int = 0,
    loop_post_ns: int = 0,
    gpu_gap_ns: int = wire.NO_VALUE,
) -> None:
    """One step record, for tests that need steps in a ring but not every part of one: the loop's own
    work and syncs default to none, and the GPU gap to not measured (as a step without CUDA timing)."""
    writer.write_step(
        step,
        start_ns,
        wall_ns,
        data_wait_ns,
        copy_cpu_ns,
        loop_pre_ns,
        sync_ns,
        gpu_gap_ns,
        h2d_bytes,
        samples,
        flags,
        loop_post_ns,
    )


def child_env(ring_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    env["XFERTOP_DIR"] = str(ring_dir)
    env["PYTHONPATH"] = SRC_DIR + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def start_script(tmp_path: Path, ring_dir: Path, code: str, **env: str) -> subprocess.Popen[str]:
    """Run ``code`` (dedented) as a script in a child Python; stdout/stderr piped as text."""
    script = tmp_path / f"train_{time.monotonic_ns()}.py"
    script.write_text(textwrap.dedent(code))
    return subprocess.Popen(
        [sys.executable, str(script)],
        env=child_env(ring_dir, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def ranks(source: JobsSource) -> list[RankState]:
    state: JobsState = source.sample_once()
    return [rank for job in state.jobs for rank in job.ranks]


def rank_with_steps(source: JobsSource, pid: int, min_steps: int) -> RankState | None:
    """The rank of ``pid`` once it has written at least ``min_steps`` steps (the ring keeps the last 1024)."""
    for rank in ranks(source):
        if rank.pid == pid and rank.steps and rank.steps[-1].step + 1 >= min_steps:
            return rank
    return None


def run_under_xfertop(
    tmp_path: Path, code: str, *flags: str, summary: bool = False
) -> tuple[subprocess.CompletedProcess[str], list[RankState]]:
    """Run ``code`` (dedented) as train.py under the real `xfertop run` (``--no-summary`` unless
    ``summary``) with a private ring directory; fail on a non-zero exit. The finished run, and the ranks
    its rings hold."""
    rings = tmp_path / "rings"
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(code))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "xfertop.cli.run",
            *([] if summary else ["--no-summary"]),
            *flags,
            "--",
            sys.executable,
            str(script),
        ],
        env=child_env(rings),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result, ranks(JobsSource(ring_dir=str(rings)))


def fake_clock_time(monkeypatch: Any, read: Callable[[], int]) -> None:
    """The step clock and its parts read ``read`` for the time (each of their modules binds
    perf_counter_ns as ``_now_ns``)."""
    for part in ("_clock", "_step_work", "_gpu_gap"):
        monkeypatch.setattr(importlib.import_module(f"xfertop.reporter.{part}"), "_now_ns", read)


class _PinnedHostTensor:
    """A pinned host tensor of ``nbytes`` as copy timing sees one (the attributes StepWork reads)."""

    is_cpu, is_cuda = True, False

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes

    def data_ptr(self) -> int:
        return id(self)

    def is_pinned(self) -> bool:
        return True


class _DeviceTensor:
    is_cpu, is_cuda, device = False, True, None


def book_timed_copy(work: Any, nbytes: int, host_ns: int) -> None:
    """Book a pinned host-to-device copy of ``nbytes`` that took ``host_ns`` on the host, as `xfertop run`'s
    Tensor.to wrapper does (``StepWork.tensor_moved``; the wrapper says ``starting`` before the copy)."""
    work.tensor_moved(_PinnedHostTensor(nbytes), _DeviceTensor(), False, host_ns)
