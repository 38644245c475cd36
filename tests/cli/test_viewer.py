"""The viewer's wiring: the host source details exactly the GPU processes and training ranks."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

from fakes.fake_pynvml import FakeGpu, FakePynvml
from xfertop.cli.viewer import watch_interesting_pids
from xfertop.sources.gpu import GpuSource
from xfertop.sources.host import HostSource
from xfertop.sources.jobs import JobsSource
from xfertop.sources.nvml_api import NvmlApi


def test_gpu_processes_are_detailed_by_the_host_source(tmp_path: Path) -> None:
    me = os.getpid()
    nvml = FakePynvml([FakeGpu(0, processes=[SimpleNamespace(pid=me, usedGpuMemory=2 * 10**9)])])
    gpu = GpuSource(api=NvmlApi(lib=nvml), first_window_s=0.0)
    host = HostSource()
    ring_dir = tmp_path / "rings"
    ring_dir.mkdir(mode=0o700)
    jobs = JobsSource(ring_dir=str(ring_dir))
    watch_interesting_pids(gpu, host, jobs)
    try:
        assert host.sample_once().processes == ()
        gpu.sample_once()
        detailed = host.sample_once().processes
        assert [process.pid for process in detailed] == [me]
        assert detailed[0].rss_bytes
    finally:
        gpu.stop()
        gpu.close()
