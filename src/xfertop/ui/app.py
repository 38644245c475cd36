"""The xfertop TUI: renders the snapshots its sources publish; never samples anything itself.

Data flows one way. Each source thread calls a listener of the app's SnapshotInbox
(ui/snapshot_inbox.py) with a new snapshot: GPU and topology snapshots come as messages (coalesced to
the latest), host snapshots and ring reads wait in the inbox and come as messages only when they must be
drawn at once (the first of each, a job or rank that came, went or changed state). The handlers and each
repaint move snapshots into the ViewState and mark the panes they feed dirty. The app's Repainter
(ui/repaint.py) draws the dirty panes at most once per display period: the GPU sample (one per period)
is the pulse, and a tick does it when no GPU sample came, and moves the header's clock; it also computes
the analysis of the jobs once per new snapshot, for every pane that shows it. Pausing freezes the
display only: sampling and history go on. What the keys and the command palette open (benchmarks,
topology, GPU detail, py-spy's attach screen) is in ui/app_commands.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import ClassVar

from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.driver import Driver
from textual.filter import LineFilter, Monochrome, NoColor
from textual.screen import Screen

from xfertop import startup_trace
from xfertop.analysis.job_analysis import Analysis
from xfertop.sources.bundle import Sources
from xfertop.ui import app_commands, gc_pace
from xfertop.ui.gpu_area import GpuArea
from xfertop.ui.header import HeaderBar
from xfertop.ui.help_screen import HelpScreen
from xfertop.ui.host_pane import HostPane
from xfertop.ui.jobs_pane import JobsPane
from xfertop.ui.key_footer import KeyFooter
from xfertop.ui.messages import GpuStateUpdated, HostStateUpdated, JobsStateUpdated, TopologyUpdated
from xfertop.ui.process_table import ProcessTable
from xfertop.ui.repaint import Repainter
from xfertop.ui.settings import Settings
from xfertop.ui.snapshot_inbox import SnapshotInbox
from xfertop.ui.terminal_watch import watch_terminal
from xfertop.ui.topology_screen import TopologyScreen
from xfertop.ui.view_state import ViewState

#: Below this width the jobs and host panes stack instead of sitting side by side.
NARROW_COLUMNS = 180


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
        self.sources = sources
        self.view = ViewState(interval_s=interval_s)
        self._start_sources = start_sources
        self._gc_undo: Callable[[], None] | None = None  # gc_pace.settle, undone at unmount
        self._clock = clock
        self._no_jobs_text = no_jobs_text
        self._note = note
        #: The sources' snapshots on their way into the view, and the panes they dirtied.
        self.inbox = SnapshotInbox(self.view, self.post_message)
        #: Draws the dirty panes (at most once per display period) and the analysis they share.
        self.painter = Repainter(self, self.inbox)

    @property
    def analysis(self) -> Analysis:
        """The analysis of the jobs shown (the rank detail reads it too), computed once per new jobs or
        GPU snapshot."""
        return self.painter.analysis

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
        self.inbox.subscribe(self.sources)
        self.sources.set_interval_s(self.view.interval_s)
        self.painter.start_tick()
        self._apply_layout(self.size.width)
        self.painter.mounted = True
        self.painter.paint_all()
        # The placeholders are painted first; the source threads (NVML setup, /proc walks) start after,
        # so they never compete with the first frame for the GIL.
        self.call_after_refresh(self._after_first_frame)
        if not self.is_headless:
            watch_terminal(self)

    def _after_first_frame(self) -> None:
        startup_trace.mark("app: first frame written to the terminal")
        if not self.is_headless and self._gc_undo is None:  # the live view's own process (gc_pace)
            self._gc_undo = gc_pace.settle()
        if self._start_sources and self.painter.mounted:
            self.sources.start()
            startup_trace.mark("app: source threads started")

    def on_unmount(self) -> None:
        if self._gc_undo is not None:
            self._gc_undo()
            self._gc_undo = None
        self.painter.mounted = False
        self.painter.stop_tick()
        if self._start_sources:
            self.sources.stop()

    def on_resize(self) -> None:
        if self.painter.mounted:
            self._apply_layout(self.size.width)
            self.gpu_area.fit(self.size.height, self.painter.gpu_room)
            self.painter.paint_all()

    def _apply_layout(self, columns: int) -> None:
        self.header_bar.screen.set_class(columns < NARROW_COLUMNS, "narrow")

    # -- data in --------------------------------------------------------------------------------
    def on_gpu_state_updated(self, message: GpuStateUpdated) -> None:
        # One GPU sample per display period: it is the pulse that draws what every source changed.
        startup_trace.mark_once("app: first GPU snapshot received")
        self.inbox.gpu_arrived(message.state)
        self.painter.repaint_dirty()

    def on_host_state_updated(self, message: HostStateUpdated) -> None:
        if self.inbox.host_arrived(message.state):
            self.painter.repaint_dirty()

    def on_jobs_state_updated(self, message: JobsStateUpdated) -> None:
        # Only the first jobs snapshot and shape changes come as messages (drawn at once); other ring
        # reads wait in the inbox for the next repaint, once per display period.
        if self.inbox.jobs_arrived(message.state):
            self.painter.repaint_dirty()

    def on_topology_updated(self, message: TopologyUpdated) -> None:
        self.view.topology = message.state
        if not self.view.paused and isinstance(self.screen, TopologyScreen):
            self.screen.show(self.view)

    # -- actions ----------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """`f` only while some job has ended (hidden from the keys line otherwise)."""
        if action == "toggle_ended":
            return self.painter.has_ended_jobs()
        return True

    def action_toggle_pause(self) -> None:
        self.view.paused = not self.view.paused
        self.painter.paint_all()

    def action_toggle_ended(self) -> None:
        """Show the ended jobs folded into one line, or fold them again."""
        self.jobs_pane.show_folded = not self.jobs_pane.show_folded
        self.painter.paint_all()

    def action_toggle_monochrome(self) -> None:
        """Grey levels only (the bar's letters carry its meaning); kept for the next run."""
        self.monochrome = not self.monochrome
        self.settings = self.settings.with_changes(monochrome=self.monochrome)
        self.settings.save()
        self.refresh_css()
        for screen in self.screen_stack:
            for widget in screen.walk_children(with_self=True):
                widget.refresh()
        self.painter.paint_all()

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
        if self.painter.mounted:
            self.header_bar.update_lines()
            self.painter.start_tick()

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_benchmarks(self) -> None:
        app_commands.open_benchmarks(self)

    def action_acceptance(self) -> None:
        app_commands.open_acceptance(self)

    def action_topology(self) -> None:
        app_commands.open_topology(self, start_source=self._start_sources)

    def sample_stacks(self, pid: int) -> None:
        """Attach py-spy to ``pid`` (the process and rank tables' `s`), or say why not: app_commands."""
        app_commands.sample_stacks(self, pid)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield from app_commands.system_commands(self)
