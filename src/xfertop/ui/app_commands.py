"""What the live view's keys and command palette open: the benchmark, acceptance, topology, GPU detail and
attach screens, and the palette's entries for them.

Functions of the app (ui/app.py), which keeps the key bindings and calls these from its actions. The
screens' modules that pull in more (the bench client, py-spy's attach) are imported only when asked for.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from textual.app import SystemCommand

from xfertop.sources.jobs.prometheus_jobs import PrometheusJobsSource
from xfertop.ui.competing import competing_job
from xfertop.ui.gpu_pane import GpuPane
from xfertop.ui.topology_screen import TopologyScreen

if TYPE_CHECKING:
    from xfertop.ui.app import XfertopApp


def system_commands(app: XfertopApp) -> Iterable[SystemCommand]:
    """The palette's entries after Textual's own: the keys' actions, and a detail screen per GPU."""
    yield SystemCommand("Pause or resume", "Freeze the display; sampling goes on", app.action_toggle_pause)
    yield SystemCommand("Sample faster", "Shorter refresh period (+)", app.action_faster)
    yield SystemCommand("Sample slower", "Longer refresh period (-)", app.action_slower)
    yield SystemCommand("Help", "Keys and how to read the panes (?)", app.action_help)
    yield SystemCommand(
        "Benchmarks", "PCIe copy microbenchmarks on the selected GPU (b)", app.action_benchmarks
    )
    yield SystemCommand(
        "Acceptance check", "Pass or fail for this box's PCIe path (a)", app.action_acceptance
    )
    yield SystemCommand(
        "Topology", "GPU links, PCIe paths, NUMA nodes, where ranks run (t)", app.action_topology
    )
    gpu_state = app.view.gpu
    for gpu in gpu_state.gpus if gpu_state else ():
        yield SystemCommand(
            f"GPU {gpu.index} detail",
            f"{gpu.name}: PCIe history, link, health",
            lambda index=gpu.index: show_gpu(app, index),
        )


def show_gpu(app: XfertopApp, index: int) -> None:
    from xfertop.ui.gpu_detail import GpuDetailScreen

    app.push_screen(GpuDetailScreen(index))


def open_benchmarks(app: XfertopApp) -> None:
    from xfertop.ui.bench_screen import benchmarks_screen  # the bench client only when asked for

    gpu_index = _selected_gpu(app)
    app.push_screen(benchmarks_screen(competing_job(app.view, gpu_index), gpu_index))


def open_acceptance(app: XfertopApp) -> None:
    from xfertop.ui.bench_screen import acceptance_screen

    gpu_index = _selected_gpu(app)
    app.push_screen(acceptance_screen(competing_job(app.view, gpu_index), gpu_index))


def open_topology(app: XfertopApp, *, start_source: bool) -> None:
    """The topology screen, unless it is shown; ``start_source``: the app runs its sources (not a test's)."""
    if isinstance(app.screen, TopologyScreen):
        return
    if start_source:
        app.sources.start_topology()  # read only once someone looks (no-op when running)
    app.push_screen(TopologyScreen())


def sample_stacks(app: XfertopApp, pid: int) -> None:
    """Attach py-spy to ``pid`` (and the other ranks of its job) in the attach screen, or say in a
    notification why attaching is not allowed."""
    from xfertop.ui.attach_screen import AttachScreen

    remote = _remote_rank_host(app, pid)
    if remote is not None:
        app.notify(
            f"pid {pid} runs on {remote}: py-spy samples only processes of this machine; run "
            f"`xfertop attach {pid}` on {remote}.",
            title=f"cannot sample pid {pid}",
            severity="warning",
            timeout=10,
            markup=False,
        )
        return
    sampler = app.sources.stack_sampler(pid)
    problem = sampler.problem()
    if problem is not None:
        app.notify(problem, title=f"cannot sample pid {pid}", severity="warning", timeout=10, markup=False)
        return
    app.push_screen(AttachScreen(sampler))


def _remote_rank_host(app: XfertopApp, pid: int) -> str | None:
    """The host of the rank with ``pid`` when the jobs come from Prometheus (`xfertop --prometheus`):
    its pid names nothing here. None for local jobs."""
    if not isinstance(app.sources.jobs, PrometheusJobsSource) or app.view.jobs is None:
        return None
    for job in app.view.jobs.jobs:
        for rank in job.ranks:
            if rank.pid == pid:
                return rank.host or "another machine"
    return None


def _selected_gpu(app: XfertopApp) -> int:
    """The focused GPU pane's GPU, else the first one."""
    focused = app.focused
    return focused.index if isinstance(focused, GpuPane) else 0
