"""On a real GPU: the topology in `--once --json` and on the `t` screen, and a job that syncs with its GPU
every step, then works on the host while the GPU idles, read as sync-bound.

Run on the GPU machine: `XFERTOP_RESULTS_DIR=$OUT pytest -m gpu tests/gpu/test_topology_and_sync_gpu.py`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from textual.widgets import Static

from gpu_results import write_result
from ring_test_tools import child_env, wait_until
from ui.live import MessageWaiter
from xfertop.analysis.steps import WindowStats, window_stats
from xfertop.cli.viewer import build_sources
from xfertop.export.json_snapshot import snapshot_dict
from xfertop.sources.gpu.source import GpuSource
from xfertop.sources.jobs.source import JobsSource
from xfertop.ui.app import XfertopApp
from xfertop.ui.messages import TopologyUpdated
from xfertop.ui.topology_screen import TopologyScreen

pytestmark = pytest.mark.gpu

#: 6-12 ms of GPU work in each step's model (``_sleep`` counts cycles, calibrated before the clocks boost),
#: then the host blocks on loss.item() and sleeps 20 ms with the GPU idle: the GPU's measured gap falls in
#: the loop's own work after the step, which follows a sync in every step; the sync waits 20-35% of the
#: step and NVML sees the GPU busy 20-35%. (With 2 ms asked and 8 ms of sleep the sync's wait, less the
#: host's ~1 ms of dispatch, sat at the 10% bar between sync-bound and loop-bound: the H200 read either.)
SYNC_BOUND_JOB = """
import time
import torch
from torch.utils.data import DataLoader, TensorDataset

loader = DataLoader(TensorDataset(torch.ones(100000, 64)), batch_size=8, pin_memory=True)
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record(); torch.cuda._sleep(50_000_000); end.record(); torch.cuda.synchronize()
cycles_per_ms = 50_000_000 / start.elapsed_time(end)
model = torch.nn.Linear(64, 64).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
deadline = time.monotonic() + 30
for (batch,) in loader:
    device_batch = batch.to("cuda", non_blocking=True)
    loss = model(device_batch).square().mean()
    torch.cuda._sleep(int(12 * cycles_per_ms))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    loss.item()
    time.sleep(0.020)
    if time.monotonic() > deadline:
        break
"""


def test_once_json_carries_the_real_topology() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "xfertop", "--once", "--json"], capture_output=True, text=True, timeout=120
    )
    document = json.loads(result.stdout)
    topology = document["topology"]
    write_result("topology_once_json", topology)
    assert topology["gpu_source"] == "nvml" and topology["error"] is None
    nvml_buses = [gpu["bus_id"].lower()[-12:] for gpu in document["gpus"]]
    assert [gpu["bus_id"] for gpu in topology["gpus"]] == nvml_buses
    assert [row[i] for i, row in enumerate(topology["links"])] == ["X"] * len(nvml_buses)


async def test_t_shows_the_real_topology() -> None:
    sources = build_sources(interval_s=0.5)
    app = XfertopApp(sources, interval_s=0.5)
    waiter = MessageWaiter()
    try:
        async with app.run_test(size=(120, 40), message_hook=waiter) as pilot:
            await pilot.press("t")
            await waiter.wait_for(lambda m: isinstance(m, TopologyUpdated), timeout_s=30)
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, TopologyScreen)
            summary = str(screen.query_one("#topology-summary", Static).render())
            matrix = str(screen.query_one("#topology-matrix", Static).render())
            paths = str(screen.query_one("#topology-paths", Static).render())
            write_result("topology_screen", {"summary": summary, "matrix": matrix, "paths": paths})
            assert "(from nvml)" in summary and matrix.splitlines()[2].startswith("GPU0  X")
    finally:
        sources.stop()


def test_a_job_that_stalls_its_gpu_from_the_host_is_sync_bound(tmp_path: Path) -> None:
    script = tmp_path / "sync_job.py"
    script.write_text(SYNC_BOUND_JOB)
    rings = tmp_path / "rings"
    # `xfertop run` with copy timing (the default) watches the model's calls, backward and .item().
    command = [sys.executable, "-m", "xfertop.cli.run", "--", sys.executable, str(script)]
    job = subprocess.Popen(command, env=child_env(rings), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    jobs = JobsSource(ring_dir=str(rings))
    gpu = GpuSource()
    try:

        def gpu_clock_window() -> WindowStats | None:
            for rank_state in (r for job_state in jobs.sample_once().jobs for r in job_state.ranks):
                stats = window_stats(rank_state.steps)
                if stats is not None and stats.clock == "gpu":
                    return stats
            return None

        wait_until(gpu_clock_window, 60, "a full window of steps on the GPU clock")
        time.sleep(1.0)  # a full NVML utilisation period of the steady loop
        gpu_state, jobs_state = gpu.sample_once(), jobs.sample_once()
        document = snapshot_dict(gpu_state, None, jobs_state, timestamp=time.time())
        verdict = document["jobs"]["items"][0]["verdict"]
        write_result(
            "sync_bound_real_gpu",
            {"verdict": verdict, "gpu_util_percent": [g.util_gpu_percent for g in gpu_state.gpus]},
        )
        assert (verdict["kind"], verdict["rule"]) == ("sync-bound", "sync-then-host-work"), verdict[
            "headline"
        ]
        job_pids = {rank.pid for job_state in jobs_state.jobs for rank in job_state.ranks}
        others = {proc.pid for g in gpu_state.gpus for proc in g.processes} - job_pids
        if others:  # this test process's own CUDA context, from tests before it in the session
            assert verdict["evidence"]["gpu_busy_share"] is None, others  # shared: not the rank's share
        else:
            assert verdict["evidence"]["gpu_busy_share"] < 0.5
        assert verdict["evidence"]["host_loop_post_share"] > 0.5, verdict["evidence"]
    finally:
        job.terminate()  # xfertop run passes it on to the job
        try:
            job.wait(timeout=10)
        except subprocess.TimeoutExpired:
            job.kill()
            job.wait()
        gpu.stop()
