"""`xfertop --once` reads NVML through a measuring window (0.3 s of PCIe counter time) and the rings around
it. A GPU reading counts for a rank only if the rank still stepped when it was taken
(analysis/evidence.py, read_while_stepping), so the rings must be read after the GPU: read before, a
rank stepping every 10 ms looks 0.3 s quiet at the reading and its GPU busy share is lost."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from fakes.fake_pynvml import FakePynvml
from xfertop import wire
from xfertop.cli.once import once_snapshot
from xfertop.reporter._identity import current_identity
from xfertop.reporter._ring_writer import RingWriter

STEP_NS = 10_000_000


def _step_until(writer: RingWriter, stop: threading.Event, first_step: threading.Event) -> None:
    """This process as a rank on cuda:0 that keeps stepping: 10 ms steps, the model 9.5 ms, no gap."""
    flags = wire.F_COPIED | wire.F_PINNED | wire.F_PARTITIONED
    step = 0
    while not stop.is_set():
        end_ns = time.perf_counter_ns()
        writer.write_step(step, end_ns - STEP_NS, STEP_NS, 100_000, 200_000, 0, 0, 0, 1 << 20, 32, flags, 0)
        step += 1
        if step == 60:  # a full window: the rank can be judged
            first_step.set()
        stop.wait(STEP_NS / 1e9)


def test_once_counts_the_gpu_reading_of_a_rank_that_steps_through_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The H200 probe recorded the affinity calls' arrays only as their repr: the topology goes without.
    nvml = FakePynvml.h200s(
        1, missing_in_binding=frozenset({"nvmlDeviceGetCpuAffinity", "nvmlDeviceGetMemoryAffinity"})
    )
    nvml.gpus[0].answers["nvmlDeviceGetUtilizationRates"] = SimpleNamespace(gpu=40, memory=5)
    nvml.gpus[0].processes.append(SimpleNamespace(pid=os.getpid(), usedGpuMemory=8 * 10**9))
    monkeypatch.setitem(sys.modules, "pynvml", nvml)  # the hardware boundary: NVML, nothing else
    writer = RingWriter(str(tmp_path), current_identity())
    writer.set_device("cuda:0")
    stop, window_full = threading.Event(), threading.Event()
    stepping = threading.Thread(target=_step_until, args=(writer, stop, window_full), daemon=True)
    stepping.start()
    try:
        assert window_full.wait(10), "the stepping thread wrote no full window"
        document = once_snapshot(ring_dir=str(tmp_path))
    finally:
        stop.set()
        stepping.join()
        writer.close()
    [job] = document["jobs"]["items"]
    assert job["verdict"]["evidence"]["gpu_busy_share"] == 0.4, job["verdict"]["headline"]
