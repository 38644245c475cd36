"""The viewer's wiring: the host source details exactly the GPU processes and training ranks."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

from fakes.fake_pynvml import FakeGpu, FakePynvml
from xfertop.cli.viewer import build_sources
from xfertop.sources.bundle import watch_interesting_pids
from xfertop.sources.gpu.nvml_api import NvmlApi
from xfertop.sources.gpu.source import GpuSource
from xfertop.sources.host.source import HostSource
from xfertop.sources.jobs.source import JobsSource
from xfertop.sources.topology.source import TopologySource


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


def test_the_gpu_follows_the_refresh_interval_the_host_up_to_twice_a_second_the_jobs_once_or_twice() -> None:
    """The rings are read at the display's period within 0.5-1 s (a job that starts or ends shows within a
    second whatever the period; a ring filling fast is read sooner: test_jobs_source). Host CPU times tick
    in 10 ms steps: a 0.25 s period would show 4-point CPU% noise."""
    sources = build_sources(interval_s=2.0)
    try:
        assert sources.gpu is not None and sources.host is not None and sources.jobs is not None
        assert sources.gpu.interval_s == sources.host.interval_s == 2.0
        assert sources.jobs.interval_s == 1.0
        assert sources.topology is not None and sources.topology.interval_s == 5.0
        sources.set_interval_s(0.25)
        assert (sources.gpu.interval_s, sources.host.interval_s, sources.jobs.interval_s) == (0.25, 0.5, 0.5)
        sources.set_interval_s(1.0)
        assert (sources.gpu.interval_s, sources.host.interval_s, sources.jobs.interval_s) == (1.0, 1.0, 1.0)
        sources.set_interval_s(0.5)
        assert (sources.gpu.interval_s, sources.host.interval_s, sources.jobs.interval_s) == (0.5, 0.5, 0.5)
        assert sources.topology.interval_s == 5.0
    finally:
        sources.stop()
    fast = build_sources(interval_s=0.25)
    try:
        assert fast.host is not None and fast.host.interval_s == 0.5
    finally:
        fast.stop()


def test_jobs_read_from_prometheus_keep_their_pace_whatever_the_display_period() -> None:
    """Prometheus's data changes once a scrape: asking it at the display's period (it was asked every
    0.5 s once the view set its period) only loads it."""
    from xfertop.sources.bundle import PROMETHEUS_INTERVAL_S

    sources = build_sources(interval_s=1.0, prometheus_url="http://127.0.0.1:9")  # never started
    try:
        assert sources.jobs is not None and sources.jobs.interval_s == PROMETHEUS_INTERVAL_S
        for period in (0.25, 1.0, 5.0):
            sources.set_interval_s(period)
            assert sources.jobs.interval_s == PROMETHEUS_INTERVAL_S
    finally:
        sources.stop()


def test_gpu_processes_are_placed_by_the_topology_source(tmp_path: Path) -> None:
    me = os.getpid()
    nvml = FakePynvml([FakeGpu(0, processes=[SimpleNamespace(pid=me, usedGpuMemory=2 * 10**9)])])
    gpu = GpuSource(api=NvmlApi(lib=nvml), first_window_s=0.0)
    jobs = JobsSource(ring_dir=str(tmp_path / "rings"))
    topology = TopologySource()
    watch_interesting_pids(gpu, HostSource(), jobs, topology)
    try:
        assert topology.sample_once().processes == ()
        gpu.sample_once()
        [placed] = topology.sample_once().processes
        assert placed.pid == me and placed.allowed_cpus == tuple(sorted(os.sched_getaffinity(me)))
    finally:
        gpu.stop()
