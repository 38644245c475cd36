"""The topology screen (`t`): the real app with the real GPU, jobs and topology sources reading the
synthetic 2-socket 8-GPU server's sysfs and /proc trees; only NVML is faked."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from ui.live import MessageWaiter, fake_gpu_source, gpu_update_where
from ui.topology_support import SYNTHETIC_PROC, SYNTHETIC_SYSFS, synthetic_nvml
from xfertop.sources.bundle import Sources, watch_interesting_pids
from xfertop.sources.gpu.nvml_api import NvmlApi
from xfertop.sources.host.source import HostSource
from xfertop.sources.jobs.source import JobsSource
from xfertop.sources.topology.source import TopologySource
from xfertop.ui.app import XfertopApp
from xfertop.ui.messages import TopologyUpdated
from xfertop.ui.topology_screen import TopologyScreen


def _app(tmp_path: Path) -> tuple[XfertopApp, Sources]:
    nvml = synthetic_nvml(load_gpu=5)
    gpu, host = fake_gpu_source(nvml), HostSource(interval_s=0.5)
    jobs = JobsSource(ring_dir=str(tmp_path / "rings"))
    topology = TopologySource(
        interval_s=0.2,
        sysfs_root=SYNTHETIC_SYSFS,
        proc_root=SYNTHETIC_PROC,
        nvml=NvmlApi(lib=nvml),
        start_nvml=True,
    )
    watch_interesting_pids(gpu, host, jobs, topology)
    sources = Sources(gpu=gpu, host=host, jobs=jobs, topology=topology)
    return XfertopApp(sources), sources


def _placed_both_ranks(message: object) -> bool:
    return (
        isinstance(message, TopologyUpdated)
        and len(message.state.processes) == 2
        and message.state.gpu_source == "nvml"
    )


def _text(screen: TopologyScreen, widget_id: str) -> str:
    return str(screen.query_one(widget_id, Static).render())


async def test_t_shows_matrix_paths_placement_and_warnings_for_eight_gpus(tmp_path: Path) -> None:
    app, sources = _app(tmp_path)
    waiter = MessageWaiter()
    async with app.run_test(size=(120, 40), message_hook=waiter) as pilot:
        assert sources.topology is not None and sources.topology.latest() is None  # not read until asked
        await pilot.press("t")
        # Rates need two GPU samples; then the next topology read is rendered against them.
        await waiter.wait_for(gpu_update_where(lambda m: (m.state.gpus[5].pcie.rx_bytes_per_s or 0) > 1e9))
        await waiter.wait_for(_placed_both_ranks)
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TopologyScreen)
        summary = _text(screen, "#topology-summary")
        assert summary.startswith("8 GPUs (from nvml), 2 NUMA nodes, 2 processes placed")
        assert "GPU 6's NUMA node is unknown" in summary
        assert "GPU 2 can do Gen5 but its slot (0000:39:00.0) tops out at Gen4" in summary
        assert "GPU 5's link runs at Gen3 while max is Gen5 under load" in summary  # it moves 20 GB/s
        assert "process 4104 (pt_main_thread) runs on NUMA node 1, its GPU 3 hangs off node 0" in summary
        assert "8 workers of process 4104 (pt_main_thread) share 2 cores (CPUs 40-41)" in summary
        matrix = _text(screen, "#topology-matrix").splitlines()
        assert matrix[1].split() == [
            "GPU0",
            "GPU1",
            "GPU2",
            "GPU3",
            "GPU4",
            "GPU5",
            "GPU6",
            "GPU7",
            "NUMA",
            "LOCAL",
            "CPUs",
        ]
        assert matrix[7].split() == [
            "GPU5",
            "SYS",
            "SYS",
            "SYS",
            "SYS",
            "PIX",
            "X",
            "SYS",
            "SYS",
            "1",
            "32-63,96-127",
        ]
        assert matrix[9].split()[:9] == ["GPU7", "SYS", "SYS", "SYS", "SYS", "SYS", "SYS", "PXB", "X"]
        assert "PIX one switch" in matrix[10] and "SYS across sockets" in matrix[10]
        paths = _text(screen, "#topology-paths")
        assert "GPU5 9b:00.0 Gen3x16 of Gen5x16 › 99:01.0 Gen3x16 of Gen5x16 › 98:00.0 Gen5x16" in paths
        placement = _text(screen, "#topology-processes")
        assert "pid 4104   GPU3 (node 0)  runs on CPUs 40-41 (node 1)" in placement
        assert "8 workers (4301,4302,4303,4304,4305,4306,4307,4308): allowed CPUs 40-41 (node 1)" in placement
        assert "4 workers (4201,4202,4203,4204): allowed CPUs 0-31,64-95 (node 0), ran on node 0" in placement
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, TopologyScreen)


async def test_at_80x24_the_matrix_fits_and_the_rest_scrolls(tmp_path: Path) -> None:
    app, _ = _app(tmp_path)
    waiter = MessageWaiter()
    async with app.run_test(size=(80, 24), message_hook=waiter) as pilot:
        await pilot.press("t")
        await waiter.wait_for(_placed_both_ranks)
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TopologyScreen)
        matrix = screen.query_one("#topology-matrix", Static)
        rows = _text(screen, "#topology-matrix").splitlines()
        assert all(len(row) <= 80 for row in rows[:10]), "a matrix row would wrap at 80 columns"
        scroller = screen.query_one("#topology")
        assert scroller.virtual_size.height > scroller.size.height  # more than a screenful: it scrolls
        scroller.scroll_end(animate=False)
        await pilot.pause()
        assert scroller.scroll_y > 0 and matrix.region.height >= 0
        await pilot.press("t")  # t again goes back
        await pilot.pause()
        assert not isinstance(app.screen, TopologyScreen)


async def test_palette_offers_the_topology(tmp_path: Path) -> None:
    app, _ = _app(tmp_path)
    async with app.run_test(size=(80, 24)):
        titles = [command.title for command in app.get_system_commands(app.screen)]
        assert "Topology" in titles
