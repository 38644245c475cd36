"""The xfertop TUI: renders the snapshots its sources publish; never samples anything itself.

Data flows one way. Each source thread calls our listener with a new snapshot. The GPU and topology
listeners post one message (coalesced to the latest); the host and jobs listeners put the snapshot in an
inbox and post a message only for the first one and for a job shape change (a job or rank came, went or
changed state). The handlers and each repaint move snapshots into the ViewState and mark the panes they
feed dirty. The analysis of the jobs (xfertop.analysis.job_analysis: window statistics, verdicts, how
ended jobs ended) is computed once per new jobs or GPU snapshot, here, and handed to every pane that
shows it. The panes are repainted at most once per display period: the GPU sample (one per period) is
the pulse that repaints whatever is dirty, and a tick (a Textual interval timer) does it when no GPU
sample came, and moves the header's clock. The first snapshot of each kind and structural job changes
are drawn at once. Pausing freezes the display only: sampling and history go on.
"""

from __future__ import annotations

import functools
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.driver import Driver
from textual.filter import LineFilter, Monochrome, NoColor
from textual.screen import Screen
from textual.timer import Timer

from xfertop import startup_trace
from xfertop.analysis.job_analysis import EMPTY, Analysis, analyse
from xfertop.model.host import HostState
from xfertop.model.jobs import JobsState
from xfertop.sources.base import PollingSource
from xfertop.sources.bundle import Sources
from xfertop.sources.jobs.prometheus_jobs import PrometheusJobsSource
from xfertop.ui.competing import competing_job
from xfertop.ui.gpu_area import GpuArea
from xfertop.ui.gpu_pane import GpuPane
from xfertop.ui.header import HeaderBar
from xfertop.ui.help_screen import HelpScreen
from xfertop.ui.host_pane import HostPane
from xfertop.ui.jobs_pane import JobsPane
from xfertop.ui.key_footer import KeyFooter
from xfertop.ui.messages import (
    GpuStateUpdated,
    HostStateUpdated,
    JobsStateUpdated,
    LatestSnapshot,
    TopologyUpdated,
)
from xfertop.ui.process_table import ProcessTable
from xfertop.ui.settings import Settings
from xfertop.ui.terminal_watch import watch_terminal
from xfertop.ui.text_lines import TextLines
from xfertop.ui.topology_screen import TopologyScreen
from xfertop.ui.view_state import ViewState

#: Below this width the jobs and host panes stack instead of sitting side by side.
NARROW_COLUMNS = 180
#: Below this many rows ended jobs fold into one line at once: the live job and its verdict stay in view.
SHORT_ROWS = 30


class XfertopApp(App[int]):
    CSS_PATH = Path(__file__).with_name("xfertop.tcss")
    TITLE = "xfertop"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        # A monitor is left with ctrl+c as often as with q (Textual would otherwise only hint at ctrl+q).
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
        Binding("p", "toggle_pause", "Pause"),
        # In the help and the palette; the keys line keeps its room for the others.
        Binding("plus,equals_sign", "faster", "Faster", key_display="+", show=False),
        Binding("minus", "slower", "Slower", key_display="-", show=False),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("b", "benchmarks", "Bench"),
        Binding("a", "acceptance", "Check"),
        Binding("t", "topology", "Topology"),
        Binding("f", "toggle_ended", "Ended jobs"),
        Binding("m", "toggle_monochrome", "Mono"),
    ]

    def __init__(
        self,
        sources: Sources,
        *,
        interval_s: float = 1.0,
        start_sources: bool = True,
        clock: Callable[[], float] = time.time,
        no_jobs_text: str | None = None,
        settings: Settings | None = None,
        note: Callable[[], str | None] | None = None,
    ) -> None:
        """``no_jobs_text``: what the jobs pane says while no training job is found (``xfertop demo``
        names its demo job, which takes seconds to import torch and build its model). ``settings``: the
        theme, monochrome and ended-job times (default: the user's config file, ui/settings.py). ``note``:
        a second header line while it returns text (``xfertop demo``: the demo's phase)."""
        super().__init__()
        self.settings = settings if settings is not None else Settings.load()
        self.monochrome = self.settings.monochrome
        self._monochrome_filter = Monochrome()
        self._no_color_filter = NoColor()
        #: The analysis of the jobs shown, computed once per new jobs or GPU snapshot (_analyse).
        self.analysis: Analysis = EMPTY
        self._analysed: tuple = ()
        self.sources = sources
        self.view = ViewState(interval_s=interval_s)
        self._start_sources = start_sources
        self._clock = clock
        self._no_jobs_text = no_jobs_text
        self._note = note
        # Messages and resizes can arrive before the panes exist; render only once they do.
        self._mounted = False
        self._jobs_shape: tuple = ()
        #: The rows the GPU area may take before the jobs and host lose theirs (_fit_middle).
        self._gpu_room: int | None = None
        #: Panes whose data changed since they were last drawn ("gpus", "host", "jobs", "processes").
        self._dirty_panes: set[str] = set()
        self._tick: Timer | None = None
        self._last_repaint = float("-inf")
        # Filled on the source threads (see _subscribe), emptied by _take_inbox on this one.
        self._host_inbox: deque[HostState] = deque()
        self._host_posted = False
        self._jobs_latest: JobsState | None = None
        self._jobs_posted_shape: tuple | None = None

    # -- layout ---------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        # Kept as attributes: a snapshot may arrive while the app tears its screens down, when a
        # query would find nothing; repainting a detached widget is harmless.
        self.header_bar = HeaderBar(self._clock, self._note)
        self.gpu_area = GpuArea()
        no_jobs = self._no_jobs_text
        self.jobs_pane = JobsPane() if no_jobs is None else JobsPane(no_jobs)
        self.host_pane = HostPane()
        self.process_table = ProcessTable()
        yield self.header_bar
        yield self.gpu_area
        with Horizontal(id="middle") as self.middle:
            yield self.jobs_pane
            yield self.host_pane
        yield self.process_table
        yield KeyFooter()

    def get_driver_class(self) -> type[Driver]:
        """Textual's Linux driver, made to let go of a dead terminal and with an input thread that sleeps
        until a key comes (ui/textual_compat.py, on the Textual it was written for); Textual's choice
        elsewhere, or where TEXTUAL_DRIVER names one."""
        from xfertop.ui.textual_compat import driver_class_for

        return driver_class_for(super().get_driver_class())

    def get_line_filters(self) -> Sequence[LineFilter]:
        """Textual's filters, and grey levels only while monochrome is on (m). Under NO_COLOR, no colour
        at all: Textual's own choice there (unless the terminal's ANSI colours are used) is its grey
        Monochrome filter, which still sends 256-colour greys (no-color.org: no colour, attributes such
        as bold may stay). The bar's letters carry its meaning without colour."""
        filters = [
            self._no_color_filter if self.no_color and isinstance(found, Monochrome) else found
            for found in super().get_line_filters()
        ]
        if self.monochrome and not self.no_color:
            filters.append(self._monochrome_filter)
        return filters

    def on_mount(self) -> None:
        startup_trace.mark("app: mounted (composed, CSS loaded)")
        if self.settings.theme and self.settings.theme in self.available_themes:
            self.theme = self.settings.theme
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        self.jobs_pane.fold_s = self.settings.ended_fold_s
        self.jobs_pane.forget_s = self.settings.ended_forget_s
        self._subscribe()
        self.sources.set_interval_s(self.view.interval_s)
        self._start_tick()
        self._apply_layout(self.size.width)
        self._mounted = True
        self._paint_all()
        # The placeholders are painted first; the source threads (NVML setup, /proc walks) start after,
        # so they never compete with the first frame for the GIL.
        self.call_after_refresh(self._after_first_frame)
        if not self.is_headless:
            watch_terminal(self)

    def _after_first_frame(self) -> None:
        startup_trace.mark("app: first frame written to the terminal")
        if self._start_sources and self._mounted:
            self.sources.start()
            startup_trace.mark("app: source threads started")

    def on_unmount(self) -> None:
        self._mounted = False
        if self._tick is not None:
            self._tick.stop()
        if self._start_sources:
            self.sources.stop()

    def on_resize(self) -> None:
        if self._mounted:
            self._apply_layout(self.size.width)
            self.gpu_area.fit(self.size.height, self._gpu_room)
            self._paint_all()

    def _fit_middle(self) -> None:
        """The jobs and host keep the rows their tables and verdicts need: the GPU area stops short of
        them; the jobs' step strip takes what is left (xfertop.tcss)."""
        jobs_rows = self.jobs_pane.natural_rows()
        # The host pane sits beside the jobs (5 rows), or under them when narrow (4).
        middle = jobs_rows + 4 if self.screen.has_class("narrow") else max(jobs_rows, 5)
        room = self.size.height - middle - self.process_table.outer_size.height - 2  # header, keys line
        if room != self._gpu_room:
            self._gpu_room = room
            self.gpu_area.fit(self.size.height, room)

    def _apply_layout(self, columns: int) -> None:
        self.header_bar.screen.set_class(columns < NARROW_COLUMNS, "narrow")

    # -- data in --------------------------------------------------------------------------------
    def _subscribe(self) -> None:
        sources = self.sources
        pairs: tuple[tuple[PollingSource | None, Callable[[Any], LatestSnapshot]], ...] = (
            (sources.gpu, GpuStateUpdated),
            (sources.topology, TopologyUpdated),
        )
        for source, message in pairs:
            if source is None:
                continue
            source.subscribe(functools.partial(self._post_snapshot, message))
            latest = source.latest()
            if latest is not None:
                self.post_message(message(latest))
        # Host snapshots and ring reads only mark panes dirty for the next repaint: they wait in an
        # inbox the repaint empties, and wake the app (a message) only when they must be drawn at once:
        # the first of each, and a job or rank that came, went or changed state. A message each cost
        # the app about as much as drawing a changed table row.
        if sources.host is not None:
            sources.host.subscribe(self._host_published)
            if (latest_host := sources.host.latest()) is not None:
                self._host_published(latest_host)
        if sources.jobs is not None:
            sources.jobs.subscribe(self._jobs_published)
            if (latest_jobs := sources.jobs.latest()) is not None:
                self._jobs_published(latest_jobs)

    def _post_snapshot(self, message: Callable[[Any], LatestSnapshot], state: object) -> None:
        """On a source's thread: post_message is thread-safe, nothing else here is touched."""
        self.post_message(message(state))

    def _host_published(self, state: HostState) -> None:
        """On the host source's thread: the first snapshot is drawn at once, the others at the next
        repaint."""
        if self._host_posted:
            self._host_inbox.append(state)  # deque: append and popleft are safe across threads
        else:
            self._host_posted = True
            self.post_message(HostStateUpdated(state))

    def _jobs_published(self, state: JobsState) -> None:
        """On the jobs source's thread: the latest read waits for the next repaint, unless its shape
        changed (drawn at once)."""
        self._jobs_latest = state
        shape = _jobs_shape(state)
        if self._jobs_posted_shape is None or shape != self._jobs_posted_shape:
            self._jobs_posted_shape = shape
            self.post_message(JobsStateUpdated(state))

    def _take_inbox(self) -> None:
        """Apply what the host and jobs sources published since the last look (main thread)."""
        inbox = self._host_inbox
        while inbox:
            if self._apply_host(inbox.popleft()):
                self._dirty_panes.update(("host", "processes"))
        jobs = self._jobs_latest
        if jobs is not None and jobs is not self.view.jobs and self._apply_jobs(jobs):
            self._dirty_panes.update(("jobs", "processes"))

    def _apply_host(self, state: HostState) -> bool:
        """Apply a host snapshot unless a newer one is already shown (a message may overtake the inbox)."""
        if self.view.host is not None and state.timestamp < self.view.host.timestamp:
            return False
        self.view.apply_host(state)
        return True

    def _apply_jobs(self, state: JobsState) -> bool:
        """Apply a jobs snapshot unless a newer one is already shown."""
        if self.view.jobs is not None and state.timestamp < self.view.jobs.timestamp:
            return False
        self.view.apply_jobs(state)
        return True

    def _analyse(self) -> Analysis:
        """The analysis of the jobs and GPU snapshots shown: computed again only when one of them is new."""
        view = self.view
        inputs = (view.jobs, view.gpu, view.host)
        if len(self._analysed) != 3 or any(a is not b for a, b in zip(inputs, self._analysed, strict=True)):
            self._analysed = inputs
            had_ended = self._has_ended_jobs()
            self.analysis = analyse(view.jobs, view.gpu, self.analysis, host=view.host)
            if self._has_ended_jobs() != had_ended:
                self.refresh_bindings()  # `f` shows only while there are ended jobs
        return self.analysis

    def _has_ended_jobs(self) -> bool:
        return any(not job.live for job in self.analysis.jobs)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """`f` only while some job has ended (hidden from the keys line otherwise)."""
        if action == "toggle_ended":
            return self._has_ended_jobs()
        return True

    def on_gpu_state_updated(self, message: GpuStateUpdated) -> None:
        # One GPU sample per display period: it is the pulse that draws what every source changed.
        startup_trace.mark_once("app: first GPU snapshot received")
        self.view.apply_gpu(message.state)
        self._dirty_panes.update(("gpus", "jobs", "processes"))  # verdicts read the GPU's utilisation
        self._repaint_dirty()

    def on_host_state_updated(self, message: HostStateUpdated) -> None:
        first = self.view.host is None
        self._take_inbox()
        self._apply_host(message.state)
        self._dirty_panes.update(("host", "processes"))
        if first:
            self._repaint_dirty()

    def on_jobs_state_updated(self, message: JobsStateUpdated) -> None:
        # Only the first jobs snapshot and shape changes come as messages (drawn at once); other ring
        # reads wait in the inbox for the next repaint, once per display period.
        first = self.view.jobs is None
        self._take_inbox()
        self._apply_jobs(message.state)
        self._dirty_panes.update(("jobs", "processes"))
        shape = _jobs_shape(self.view.jobs)
        if first or shape != self._jobs_shape:  # a job or rank came, went or changed state: now
            self._jobs_shape = shape
            self._repaint_dirty()

    def _start_tick(self) -> None:
        """The tick repaints when no GPU sample came for most of a period (no GPU source, or it is late)
        and moves the clock. Without a GPU source it is the pulse (every period, at least once a second,
        for the clock); with one at periods up to 1 s, the GPU samples repaint and move the clock, and
        the tick only catches a late sample: every 1.5 periods but no more than once a second (a wake-up
        costs the main thread about as much as drawing a changed line)."""
        if self._tick is not None:
            self._tick.stop()
        interval_s = self.view.interval_s
        if self.sources.gpu is None or interval_s > 1.0:  # the clock needs it every second
            every_s = min(interval_s, 1.0)
        else:
            every_s = max(1.5 * interval_s, 1.0)
        self._tick = self.set_interval(every_s, self._on_tick)

    def _on_tick(self) -> None:
        if time.monotonic() - self._last_repaint >= 0.75 * self.view.interval_s:
            self._repaint_dirty()
        elif self._mounted and not self.view.paused:
            self.header_bar.update_lines()

    def _repaint_dirty(self) -> None:
        """Repaint the dirty panes (nothing while paused: they stay dirty, and resuming draws all)."""
        self._take_inbox()  # paused or not: the view keeps the latest snapshots and the history
        if not self._mounted:
            return
        self._last_repaint = time.monotonic()
        self.header_bar.update_lines()
        if self.view.paused or not self._dirty_panes:
            return
        dirty, self._dirty_panes = self._dirty_panes, set()
        self._paint(
            gpus="gpus" in dirty, host="host" in dirty, jobs="jobs" in dirty, processes="processes" in dirty
        )

    def on_topology_updated(self, message: TopologyUpdated) -> None:
        self.view.topology = message.state
        if not self.view.paused and isinstance(self.screen, TopologyScreen):
            self.screen.show(self.view)

    def _paint_all(self) -> None:
        self._take_inbox()
        self._dirty_panes.clear()
        self._paint(gpus=True, host=True, jobs=True, processes=True)

    def _paint(
        self, *, gpus: bool = False, host: bool = False, jobs: bool = False, processes: bool = False
    ) -> None:
        """Repaint what a new snapshot changed (each source touches only its panes and the processes)."""
        if self.view.paused or not self._mounted:
            return
        with self.batch_update():  # one screen update for all the panes' refreshes
            self._paint_panes(gpus=gpus, host=host, jobs=jobs, processes=processes)

    def _paint_panes(self, *, gpus: bool, host: bool, jobs: bool, processes: bool) -> None:
        self.header_bar.update_lines()  # the clock: repainted only when its second changed
        if gpus:
            self.gpu_area.show(self.view.gpu)
        if host:
            self.host_pane.update_lines()
        if jobs or gpus:
            short = self.size.height < SHORT_ROWS
            self.jobs_pane.show(self.view.jobs, self._analyse(), fold_now=short, all_advice=not short)
            self._fit_middle()
        if processes:
            self.process_table.show(self.view)
        if len(self.screen_stack) > 1:  # a detail screen on top: its live parts follow the data
            for widget in self.screen.query(".live"):
                if isinstance(widget, TextLines):
                    widget.update_lines()
                else:
                    widget.refresh()

    # -- actions ----------------------------------------------------------------------------------
    def action_toggle_pause(self) -> None:
        self.view.paused = not self.view.paused
        self._paint_all()

    def action_toggle_ended(self) -> None:
        """Show the ended jobs folded into one line, or fold them again."""
        self.jobs_pane.show_folded = not self.jobs_pane.show_folded
        self._paint_all()

    def action_toggle_monochrome(self) -> None:
        """Grey levels only (the bar's letters carry its meaning); kept for the next run."""
        self.monochrome = not self.monochrome
        self.settings = self.settings.with_changes(monochrome=self.monochrome)
        self.settings.save()
        self.refresh_css()
        for screen in self.screen_stack:
            for widget in screen.walk_children(with_self=True):
                widget.refresh()
        self._paint_all()

    def _theme_changed(self, theme: object) -> None:
        name = self.theme
        if name != self.settings.theme:
            self.settings = self.settings.with_changes(theme=name)
            self.settings.save()

    def action_faster(self) -> None:
        self.sources.set_interval_s(self.view.faster())
        self._period_changed()

    def action_slower(self) -> None:
        self.sources.set_interval_s(self.view.slower())
        self._period_changed()

    def _period_changed(self) -> None:
        if self._mounted:
            self.header_bar.update_lines()
            self._start_tick()

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_benchmarks(self) -> None:
        from xfertop.ui.bench_screen import benchmarks_screen  # the bench client only when asked for

        gpu_index = self._selected_gpu()
        self.push_screen(benchmarks_screen(competing_job(self.view, gpu_index), gpu_index))

    def action_acceptance(self) -> None:
        from xfertop.ui.bench_screen import acceptance_screen

        gpu_index = self._selected_gpu()
        self.push_screen(acceptance_screen(competing_job(self.view, gpu_index), gpu_index))

    def action_topology(self) -> None:
        if isinstance(self.screen, TopologyScreen):
            return
        if self._start_sources:
            self.sources.start_topology()  # read only once someone looks (no-op when running)
        self.push_screen(TopologyScreen())

    def sample_stacks(self, pid: int) -> None:
        """Attach py-spy to ``pid`` (and the other ranks of its job) in the attach screen, or say in a
        notification why attaching is not allowed."""
        from xfertop.ui.attach_screen import AttachScreen

        remote = self._remote_rank_host(pid)
        if remote is not None:
            self.notify(
                f"pid {pid} runs on {remote}: py-spy samples only processes of this machine; run "
                f"`xfertop attach {pid}` on {remote}.",
                title=f"cannot sample pid {pid}",
                severity="warning",
                timeout=10,
                markup=False,
            )
            return
        sampler = self.sources.stack_sampler(pid)
        problem = sampler.problem()
        if problem is not None:
            self.notify(
                problem, title=f"cannot sample pid {pid}", severity="warning", timeout=10, markup=False
            )
            return
        self.push_screen(AttachScreen(sampler))

    def _remote_rank_host(self, pid: int) -> str | None:
        """The host of the rank with ``pid`` when the jobs come from Prometheus (`xfertop --prometheus`):
        its pid names nothing here. None for local jobs."""
        if not isinstance(self.sources.jobs, PrometheusJobsSource) or self.view.jobs is None:
            return None
        for job in self.view.jobs.jobs:
            for rank in job.ranks:
                if rank.pid == pid:
                    return rank.host or "another machine"
        return None

    def _selected_gpu(self) -> int:
        """The focused GPU pane's GPU, else the first one."""
        focused = self.focused
        return focused.index if isinstance(focused, GpuPane) else 0

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand(
            "Pause or resume", "Freeze the display; sampling goes on", self.action_toggle_pause
        )
        yield SystemCommand("Sample faster", "Shorter refresh period (+)", self.action_faster)
        yield SystemCommand("Sample slower", "Longer refresh period (-)", self.action_slower)
        yield SystemCommand("Help", "Keys and how to read the panes (?)", self.action_help)
        yield SystemCommand(
            "Benchmarks", "PCIe copy microbenchmarks on the selected GPU (b)", self.action_benchmarks
        )
        yield SystemCommand(
            "Acceptance check", "Pass or fail for this box's PCIe path (a)", self.action_acceptance
        )
        yield SystemCommand(
            "Topology", "GPU links, PCIe paths, NUMA nodes, where ranks run (t)", self.action_topology
        )
        gpu_state = self.view.gpu
        for gpu in gpu_state.gpus if gpu_state else ():
            yield SystemCommand(
                f"GPU {gpu.index} detail",
                f"{gpu.name}: PCIe history, link, health",
                lambda index=gpu.index: self._show_gpu(index),
            )

    def _show_gpu(self, index: int) -> None:
        from xfertop.ui.gpu_detail import GpuDetailScreen

        self.push_screen(GpuDetailScreen(index))


def _jobs_shape(state: JobsState | None) -> tuple:
    """Which ranks exist and in what state: a change here is drawn at once, new steps at the display rate."""
    if state is None:
        return ()
    return tuple((job.job_key, tuple((rank.pid, rank.status) for rank in job.ranks)) for job in state.jobs)
