"""Training jobs of this user on this node: one row per rank, then each job's verdict in words."""

from __future__ import annotations

import time
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import DataTable

from xfertop.analysis.rank_gpu import gpu_busy_share_by_pid
from xfertop.model.gpu import GpuState
from xfertop.model.jobs import JobsState
from xfertop.ui.process_table import selected_row_key
from xfertop.ui.quiet import QuietRender, QuietStatic
from xfertop.ui.rank_row import COLUMNS, COMPACT_COLUMNS, StatsByRank, rank_cells, rank_key
from xfertop.ui.table_rows import CellCachedTable, update_row
from xfertop.ui.verdicts import verdict_line, verdict_of

#: Verdicts judge the last 50 steps: at refresh periods under a second they are judged again once a second
#: (judging them cost the viewer as much as drawing the rest of the jobs pane, at 4 Hz), at once when a
#: job, rank or rank state, the ring problems, the width or which ranks have a GPU busy share changed.
VERDICT_PERIOD_S = 1.0

NO_JOBS = (
    "no training jobs of this user found. Start one with `xfertop run -- python train.py` "
    "or try `xfertop demo`."
)


def verdict_text(state: JobsState, width: int, gpu: GpuState | None = None) -> Text:
    """Each job's verdict and first advice, one line each (cut to ``width``), then ring problems."""
    lines = []
    for job in state.jobs:
        verdict = verdict_of(job, gpu)
        lines.append(verdict_line(job, verdict, with_advice=False))
        if verdict.advice:
            # The first (most important) advice here; Enter on a rank shows all of it.
            advice = Text(f"  → {verdict.advice[0]}", style="dim")
            advice.truncate(width, overflow="ellipsis")
            lines.append(advice)
    for problem in state.problems:
        lines.append(Text(problem, style="yellow"))
    if state.error:
        lines.append(Text(state.error, style="red"))
    return Text("\n").join(lines)


def _line_count(text: Text, width: int) -> int | None:
    """Lines ``text`` takes at ``width``, or None when a line may wrap (then the height is not known)."""
    lines = text.split()
    if width <= 0 or any(line.cell_len > width for line in lines):
        return None
    return len(lines)


class RankTable(CellCachedTable):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "sample_stacks", "Stacks", tooltip="Sample its Python stacks with py-spy")
    ]

    def __init__(self) -> None:
        super().__init__(id="ranks", cursor_type="row")
        self.columns_shown: tuple[str, ...] = COLUMNS
        self._stats = StatsByRank()

    def on_mount(self) -> None:
        self._add_columns()

    def _add_columns(self) -> None:
        for name in self.columns_shown:
            self.add_column(name, key=name)

    def set_compact(self, compact: bool) -> None:
        """Fewer columns on narrow terminals; rows are rebuilt on the next show()."""
        wanted = COMPACT_COLUMNS if compact else COLUMNS
        if wanted != self.columns_shown:
            self.columns_shown = wanted
            self.clear(columns=True)
            self._add_columns()

    def show(self, state: JobsState) -> None:
        picks = [COLUMNS.index(name) for name in self.columns_shown]
        stats = self._stats
        wanted = {
            rank_key(rank): tuple(cells[i] for i in picks)
            for job in state.jobs
            for rank in job.ranks
            for cells in (rank_cells(job, rank, stats.of(rank)),)
        }
        stats.keep_only(set(wanted))
        for row_key in list(self.rows):
            if row_key.value not in wanted:
                self.remove_row(row_key)
        for key, cells in wanted.items():
            if key in self.rows:
                update_row(self, key, self.columns_shown, cells)
            else:
                self.add_row(*cells, key=key)

    def action_sample_stacks(self) -> None:
        """py-spy on the rank under the cursor and the other ranks of its job (the attach screen)."""
        key = selected_row_key(self)
        if key is not None:
            self.app.sample_stacks(int(key.rpartition("|")[2]))  # type: ignore[attr-defined]


class JobsPane(QuietRender, Vertical):
    def __init__(self, no_jobs_text: str = NO_JOBS) -> None:
        """``no_jobs_text``: what the pane says while it has no job to show."""
        super().__init__(id="jobs")
        self.border_title = "jobs"
        self.rank_table = RankTable()
        # Kept rather than queried: a DOM query each period cost as much as drawing a changed row.
        self._empty = QuietStatic(no_jobs_text, id="jobs-empty")
        self._verdicts_widget = QuietStatic("", id="verdicts")
        self._verdicts: Text | None = None
        self._judged: tuple = ()  # what the verdicts shown were judged on, besides the steps
        self._judged_at = float("-inf")

    def compose(self):
        yield self._empty
        yield self.rank_table
        yield self._verdicts_widget

    def show(self, state: JobsState | None, gpu: GpuState | None = None) -> None:
        if state is None or not self._empty.is_attached:  # a snapshot landed before compose or in teardown
            return
        has_jobs = bool(state.jobs)
        self._empty.display = not has_jobs
        table = self.rank_table
        table.display = has_jobs
        table.show(state)
        width = self.content_size.width or 80
        ranks = [rank for job in state.jobs for rank in job.ranks]
        judged = (
            width,
            state.problems,
            state.error,
            tuple(sorted(gpu_busy_share_by_pid(ranks, gpu))),
            tuple((job.job_key, tuple((rank.pid, rank.status) for rank in job.ranks)) for job in state.jobs),
        )
        now = time.monotonic()
        if judged != self._judged or now - self._judged_at >= VERDICT_PERIOD_S:
            self._judged, self._judged_at = judged, now
            self._show_verdicts(verdict_text(state, width, gpu))

    def _show_verdicts(self, verdicts: Text) -> None:
        """Repaint the verdict lines only when they changed, and relayout only when their count did."""
        if verdicts == self._verdicts:
            return
        widget = self._verdicts_widget
        widget.display = bool(verdicts.plain)
        width = widget.content_size.width
        lines = _line_count(verdicts, width)
        same_height = (
            lines is not None and self._verdicts is not None and lines == _line_count(self._verdicts, width)
        )
        self._verdicts = verdicts
        widget.update(verdicts, layout=not same_height)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        from xfertop.ui.job_detail import JobDetailScreen

        job_key, _, pid = str(event.row_key.value).rpartition("|")
        self.app.push_screen(JobDetailScreen(job_key, int(pid)))
