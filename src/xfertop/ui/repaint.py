"""Drawing the view: the panes the new snapshots dirtied, at most once per display period, in one frame.

The GPU sample (one per period) is the pulse that repaints whatever is dirty; a tick (a Textual interval
timer) does it when no GPU sample came, and moves the header's clock. The analysis of the jobs
(xfertop.analysis.job_analysis: window statistics, verdicts, how ended jobs ended) is computed here once
per new jobs or GPU snapshot and handed to every pane that shows it. Pausing freezes the drawing only:
the dirty marks wait, and resuming draws everything.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from textual.timer import Timer

from xfertop.analysis.job_analysis import EMPTY, Analysis, analyse
from xfertop.ui.snapshot_inbox import SnapshotInbox
from xfertop.ui.text_lines import TextLines

if TYPE_CHECKING:
    from xfertop.ui.app import XfertopApp

#: Below this many rows ended jobs fold into one line at once: the live job and its verdict stay in view.
SHORT_ROWS = 30


class Repainter:
    """Draws the app's panes from its ViewState: what ``inbox`` marked dirty, or everything."""

    def __init__(self, app: XfertopApp, inbox: SnapshotInbox) -> None:
        self._app = app
        self._inbox = inbox
        #: The panes exist: messages and resizes can arrive before they do (or after), drawn only now.
        self.mounted = False
        #: The analysis of the jobs shown, computed once per new jobs or GPU snapshot (analyse).
        self.analysis: Analysis = EMPTY
        self._analysed: tuple = ()
        #: The rows the GPU area may take before the jobs and host lose theirs (_fit_middle).
        self.gpu_room: int | None = None
        self._tick: Timer | None = None
        self._tick_s = 1.0
        self._last_repaint = float("-inf")

    def start_tick(self) -> None:
        """The tick repaints when no GPU sample came for most of a period (no GPU source, or it is late)
        and moves the clock. Without a GPU source it is the pulse (every period, at least once a second,
        for the clock); with one at periods up to 1 s, the GPU samples repaint and move the clock, and
        the tick only catches a late sample: every 1.5 periods but no more than once a second (a wake-up
        costs the main thread about as much as drawing a changed line)."""
        self.stop_tick()
        app = self._app
        interval_s = app.view.interval_s
        if app.sources.gpu is None or interval_s > 1.0:  # the clock needs it every second
            every_s = min(interval_s, 1.0)
        else:
            every_s = max(1.5 * interval_s, 1.0)
        self._tick_s = every_s
        self._tick = app.set_interval(every_s, self._on_tick)

    def stop_tick(self) -> None:
        if self._tick is not None:
            self._tick.stop()

    def _on_tick(self) -> None:
        """Repaint when the pulse is missing. With a GPU source its samples repaint, and the clock moves
        with them: a tick between two samples drew the header's new second in a screen update of its own
        (2.4 screen updates a second at 1 Hz where 1.7 do), so it repaints only once a sample is a whole
        tick late. At periods over a second the clock still moves every second, and a tick in the last
        quarter of the period does not draw what the sample due next would draw again (at 4 s: two full
        screen updates 40 ms apart, every period)."""
        app, view = self._app, self._app.view
        slow = view.interval_s > 1.0
        if app.sources.gpu is None:
            late_s = 0.75 * view.interval_s
        else:
            late_s = view.interval_s + self._tick_s if slow else self._tick_s
        if time.monotonic() - self._last_repaint >= late_s:
            self.repaint_dirty()
        elif slow and self.mounted and not view.paused:
            app.header_bar.update_lines()

    def repaint_dirty(self) -> None:
        """Repaint the dirty panes (nothing while paused: they stay dirty, and resuming draws all)."""
        self._inbox.take()  # paused or not: the view keeps the latest snapshots and the history
        if not self.mounted:
            return
        self._last_repaint = time.monotonic()
        self._app.header_bar.update_lines()
        if self._app.view.paused or not self._inbox.dirty:
            return
        dirty = self._inbox.take_dirty()
        self._paint(
            gpus="gpus" in dirty, host="host" in dirty, jobs="jobs" in dirty, processes="processes" in dirty
        )

    def paint_all(self) -> None:
        self._inbox.take()
        self._inbox.dirty.clear()
        self._paint(gpus=True, host=True, jobs=True, processes=True)

    def _paint(
        self, *, gpus: bool = False, host: bool = False, jobs: bool = False, processes: bool = False
    ) -> None:
        """Repaint what a new snapshot changed (each source touches only its panes and the processes)."""
        if self._app.view.paused or not self.mounted:
            return
        with self._app.batch_update():  # one screen update for all the panes' refreshes
            self._paint_panes(gpus=gpus, host=host, jobs=jobs, processes=processes)

    def _paint_panes(self, *, gpus: bool, host: bool, jobs: bool, processes: bool) -> None:
        app = self._app
        app.header_bar.update_lines()  # the clock: repainted only when its second changed
        if gpus:
            app.gpu_area.show(app.view.gpu)
        if host:
            app.host_pane.update_lines()
        if jobs:
            short = app.size.height < SHORT_ROWS
            app.jobs_pane.show(app.view.jobs, self.analyse(), fold_now=short, all_advice=not short)
            self._fit_middle()
        if processes:
            app.process_table.show(app.view)
        if len(app.screen_stack) > 1:  # a detail screen on top: its live parts follow the data
            for widget in app.screen.query(".live"):
                if isinstance(widget, TextLines):
                    widget.update_lines()
                else:
                    widget.refresh()

    def _fit_middle(self) -> None:
        """The jobs and host keep the rows their tables and verdicts need: the GPU area stops short of
        them; the jobs' step strip takes what is left (xfertop.tcss)."""
        app = self._app
        jobs_rows = app.jobs_pane.natural_rows()
        # The host pane sits beside the jobs (5 rows), or under them when narrow (4).
        middle = jobs_rows + 4 if app.screen.has_class("narrow") else max(jobs_rows, 5)
        header = max(1, app.header_bar.outer_size.height)  # 2 or more with the demo's note, a failing source
        room = app.size.height - middle - app.process_table.outer_size.height - header - 1  # the keys line
        if room != self.gpu_room:
            self.gpu_room = room
            app.gpu_area.fit(app.size.height, room)

    def analyse(self) -> Analysis:
        """The analysis of the jobs and GPU snapshots shown: computed again only when one of them is new."""
        view = self._app.view
        inputs = (view.jobs, view.gpu, view.host)
        if len(self._analysed) != 3 or any(a is not b for a, b in zip(inputs, self._analysed, strict=True)):
            self._analysed = inputs
            had_ended = self.has_ended_jobs()
            self.analysis = analyse(view.jobs, view.gpu, self.analysis, host=view.host)
            if self.has_ended_jobs() != had_ended:
                self._app.refresh_bindings()  # `f` shows only while there are ended jobs
        return self.analysis

    def has_ended_jobs(self) -> bool:
        return any(not job.live for job in self.analysis.jobs)
