"""Real rings, judged live. A loop that syncs every step and then works on the host is sync-bound from its
ring alone: `xfertop run` records the syncs and the loop's work after them, and the GPU's gaps fall
there. A loop whose host sits in the model while the GPU never drains between steps needs NVML: the step
clock alone reads compute-bound, and NVML's 40% busy says the GPU waits inside the model's dispatch."""

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
from xfertop.sources.jobs.source import JobsSource
from xfertop.ui.app import XfertopApp
from xfertop.ui.messages import GpuStateUpdated

STEP_NS = 10_000_000


def _write_ring(ring_dir: Path, *, syncs_then_logs: bool, steps: int = 60) -> RingWriter:
    """This process as a rank on cuda:0 under `xfertop run`, 10 ms steps: wait 0.1 ms, copy 0.2 ms. With
    ``syncs_then_logs``: model 4 ms, loss.item() 1.7 ms, then 4 ms of host work after the step, which the
    GPU sits through idle (gap 4.1 ms). Else: the model 9.5 ms and no gap (the GPU never drained)."""
    writer = RingWriter(str(ring_dir), current_identity())
    writer.set_device("cuda:0")
    start_ns = time.perf_counter_ns() - steps * STEP_NS
    sync_ns, post_ns, gap_ns = (1_700_000, 4_000_000, 4_100_000) if syncs_then_logs else (0, 0, 0)
    flags = wire.F_COPIED | wire.F_PINNED | wire.F_PARTITIONED | wire.F_GPU_PENDING
    if syncs_then_logs:
        flags |= wire.F_SYNCED
    for step in range(steps):
        writer.write_step(
            step,
            start_ns + step * STEP_NS,
            STEP_NS,
            100_000,
            200_000,
            0,
            sync_ns,
            wire.NO_VALUE,  # pending: the events resolve later
            1 << 20,
            32,
            flags,
            post_ns,
        )
        writer.patch_gpu(step, gap_ns, wire.F_GPU_RESOLVED, wire.F_GPU_PENDING)
    return writer


def _nvml_busy_40_percent_with_this_process() -> FakePynvml:
    nvml = FakePynvml.h200s(1)
    nvml.gpus[0].answers["nvmlDeviceGetUtilizationRates"] = SimpleNamespace(gpu=40, memory=5)
    nvml.gpus[0].processes.append(SimpleNamespace(pid=os.getpid(), usedGpuMemory=8 * 10**9))
    return nvml


def test_export_judges_the_ring_with_nvml_utilisation(tmp_path: Path) -> None:
    writer = _write_ring(tmp_path, syncs_then_logs=False)
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
    assert verdict["kind"] == "launch-bound" and verdict["severity"] == "critical"
    assert verdict["evidence"]["gpu_busy_share"] == 0.4


def test_a_ring_that_syncs_then_works_on_the_host_is_sync_bound_without_nvml(tmp_path: Path) -> None:
    writer = _write_ring(tmp_path, syncs_then_logs=True)
    try:
        jobs_state = JobsSource(ring_dir=str(tmp_path)).sample_once()
    finally:
        writer.close()
    [job] = jobs_state.jobs
    verdict = job_dict(job)["verdict"]
    assert (verdict["kind"], verdict["severity"]) == ("sync-bound", "critical")
    assert verdict["evidence"]["gpu_idle_in"]["loop_post"] == 0.4
    assert verdict["evidence"]["host_sync_share"] == 0.17


async def test_the_jobs_pane_says_sync_bound(tmp_path: Path) -> None:
    writer = _write_ring(tmp_path, syncs_then_logs=True)
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
            assert "sync-bound: the loop syncs with the GPU every step, then works on the host" in verdicts
    finally:
        writer.close()
