"""Sync-bound needs NVML: a real ring whose GPU timeline tiles the step (as CUDA events do) reads as
compute-bound from the step clock alone, and as host-bound once NVML says its GPU is busy 40%."""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace

from fakes.fake_pynvml import FakePynvml
from ui.live import MessageWaiter, fake_gpu_source, gpu_update_where
from xfertop import wire
from xfertop.export.json_snapshot import job_dict, snapshot_dict
from xfertop.reporter._identity import current_identity
from xfertop.reporter._ring_writer import RingWriter
from xfertop.sources.bundle import Sources
from xfertop.sources.jobs import JobsSource
from xfertop.ui.app import XfertopApp
from xfertop.ui.messages import GpuStateUpdated

STEP_NS = 10_000_000


def _write_ring(ring_dir: Path, steps: int = 60) -> RingWriter:
    """This process as a rank on cuda:0: 10 ms steps, GPU idle 0.2 ms, copy 0.3 ms, 'compute' 9.5 ms
    (host stalls inside the step count as compute on the GPU clock)."""
    writer = RingWriter(str(ring_dir), current_identity())
    writer.set_device("cuda:0")
    start_ns = time.perf_counter_ns() - steps * STEP_NS
    for step in range(steps):
        writer.write_step(
            step,
            start_ns + step * STEP_NS,
            STEP_NS,
            100_000,
            200_000,
            1 << 20,
            32,
            wire.F_COPIED | wire.F_PINNED | wire.F_GPU_PENDING,
        )
        writer.patch_gpu(step, 300_000, 9_500_000, 200_000, wire.F_GPU_RESOLVED, wire.F_GPU_PENDING)
    return writer


def _nvml_busy_40_percent_with_this_process() -> FakePynvml:
    nvml = FakePynvml.h200s(1)
    nvml.gpus[0].answers["nvmlDeviceGetUtilizationRates"] = SimpleNamespace(gpu=40, memory=5)
    nvml.gpus[0].processes.append(SimpleNamespace(pid=os.getpid(), usedGpuMemory=8 * 10**9))
    return nvml


def test_export_judges_the_ring_with_nvml_utilisation(tmp_path: Path) -> None:
    writer = _write_ring(tmp_path)
    gpu = fake_gpu_source(_nvml_busy_40_percent_with_this_process())
    try:
        jobs_state = JobsSource(ring_dir=str(tmp_path)).sample_once()
        gpu_state = gpu.sample_once()
    finally:
        gpu.stop()
        writer.close()
    [job] = jobs_state.jobs
    assert job_dict(job)["verdict"]["kind"] == "compute-bound"  # the step clock alone cannot see it
    verdict = snapshot_dict(gpu_state, None, jobs_state, timestamp=0.0)["jobs"]["items"][0]["verdict"]
    assert verdict["kind"] == "host-bound" and verdict["severity"] == "critical"
    assert verdict["evidence"]["gpu_busy_share"] == 0.4


async def test_the_jobs_pane_says_sync_bound(tmp_path: Path) -> None:
    writer = _write_ring(tmp_path)
    sources = Sources(
        gpu=fake_gpu_source(_nvml_busy_40_percent_with_this_process()),
        jobs=JobsSource(ring_dir=str(tmp_path)),
    )
    app = XfertopApp(sources)
    waiter = MessageWaiter()
    try:
        async with app.run_test(size=(160, 48), message_hook=waiter) as pilot:
            await waiter.wait_for(gpu_update_where(lambda m: m.state.gpus[0].util_gpu_percent == 40))
            # Ring reads reach the view at repaints (only a new job comes as a message): the next GPU
            # sample after the job is in the view draws it with the 40% busy share.
            await waiter.wait_for(
                lambda m: (
                    isinstance(m, GpuStateUpdated) and app.view.jobs is not None and bool(app.view.jobs.jobs)
                )
            )
            await pilot.pause()
            verdicts = "\n".join(line.plain for line in app.jobs_pane.verdicts.lines)
            assert "host-bound: the GPU is busy only 40%" in verdicts
    finally:
        writer.close()
