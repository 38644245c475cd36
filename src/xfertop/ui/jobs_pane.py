"""Training jobs of this user on this node: one row per rank, then each job's verdict in words.

Live jobs come first. A job that ended is dimmed and says how it ended ("exited 0", "killed by SIGKILL",
its last live verdict kept); after ``fold_s`` its rows fold into one line ("3 ended jobs: f shows them")
and after ``forget_s`` it leaves the view (the JSON output and the record files keep it). Two jobs of the
same name are told apart by their first rank's pid.
"""

from __future__ import annotations

import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.console import Console
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Static

from xfertop.analysis.job_analysis import Analysis, JobAnalysis
from xfertop.model.jobs import JobsState
from xfertop.ui.line_table import Column, LineTable
from xfertop.ui.rank_row import COLUMNS, rank_cells, rank_key
from xfertop.ui.step_strip import StepStrip
from xfertop.ui.text_lines import TextLines

NO_JOBS = (
    "no training jobs of this user found. Start one with `xfertop run -- python train.py` "
    "or try `xfertop demo`."
)
#: An ended job's rows fold into one line this long after it ended, and leave the view after this.
ENDED_FOLD_S = 30.0
ENDED_FORGET_S = 600.0
#: The rank table's max-height (xfertop.tcss #ranks): header and rows.
_MAX_TABLE_ROWS = 12
_SEVERITY_STYLES = {"info": "green", "warn": "bold yellow", "critical": "bold red"}


@dataclass(frozen=True)
class ShownJobs:
    """Which jobs the pane shows in full and how many ended ones are folded into one line."""

    jobs: tuple[JobAnalysis, ...]
    folded: int


class EndedJobs:
    """How long each job has been ended: since the viewer first saw it ended (its clock), or since its
    ranks' last heartbeat where that is longer (a job that ended before this viewer started is as old as
    it is: a second `xfertop demo` showed the first one's ended job whole for its first 30 s)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._ended_at: dict[str, float] = {}

    def choose(self, analysis: Analysis, *, fold_s: float, forget_s: float, show_folded: bool) -> ShownJobs:
        now = self._clock()
        keys = {job.job.job_key for job in analysis.jobs}
        for key in self._ended_at.keys() - keys:
            del self._ended_at[key]
        live = [job for job in analysis.jobs if job.live]
        shown_ended, folded = [], 0
        for job in analysis.jobs:
            if job.live:
                self._ended_at.pop(job.job.job_key, None)
                continue
            heartbeat_age = min((rank.heartbeat_age_s for rank in job.job.ranks), default=0.0)
            age = max(now - self._ended_at.setdefault(job.job.job_key, now), heartbeat_age)
            if age >= forget_s:
                continue
            if age >= fold_s and not show_folded:
                folded += 1
            else:
                shown_ended.append(job)
        return ShownJobs(tuple(live + shown_ended), folded)


def job_names(jobs: Sequence[JobAnalysis]) -> dict[str, str]:
    """job key -> the name shown: the script's name, and its first rank's pid where two jobs share it."""
    counts: dict[str, int] = {}
    for job in jobs:
        counts[job.job.name] = counts.get(job.job.name, 0) + 1
    names = {}
    for job in jobs:
        name = job.job.name
        if counts[name] > 1 and job.job.ranks:
            name = f"{name} [{min(rank.pid for rank in job.job.ranks)}]"
        names[job.job.job_key] = name
    return names


def verdict_line(name: str, job: JobAnalysis, with_advice: bool = True) -> Text:
    """ "train.py: input-bound: the GPU sits idle 41% ..."; an ended job: "train.py (exited 0): ..."."""
    verdict = job.verdict
    line = Text()
    if job.live:
        line.append(f"{name}: ", style="bold")
        line.append(verdict.headline, style=_SEVERITY_STYLES.get(verdict.severity, "bold"))
    else:
        how = ", ".join(job.ended_how) or "ended"
        line.append(f"{name} ({how}", style="bold red" if job.failed else "bold dim")
        line.append("; last verdict" if job.frozen else "", style="dim")
        line.append("): ", style="bold red" if job.failed else "bold dim")
        line.append(verdict.headline, style="dim")
    if with_advice and verdict.advice:
        line.append("  " + " ".join(verdict.advice), style="dim")
    return line


def wrapped_advice(advice: str, width: int) -> list[Text]:
    """One advice as dim lines of at most ``width`` cells: "  → " before the first, indented after."""
    lines = textwrap.wrap(advice, max(width, 8), initial_indent="  → ", subsequent_indent="    ")
    return [Text(line, style="dim") for line in lines]


def verdict_lines(
    shown: ShownJobs,
    state: JobsState,
    width: int,
    console: Console,
    *,
    selected_job: str | None = None,
    all_advice: bool = True,
) -> list[Text]:
    """Each shown job's verdict and, for live jobs, its advice, wrapped to ``width`` (never cut): all of
    it for ``selected_job`` (or the only live job) while ``all_advice``, else the first (most
    important; Enter on a rank shows all of it). Then the folded line and ring problems."""
    names = job_names(shown.jobs)
    live = [job for job in shown.jobs if job.live]
    focus = selected_job if selected_job is not None else live[0].job.job_key if len(live) == 1 else None
    lines: list[Text] = []
    for job in shown.jobs:
        headline = verdict_line(names[job.job.job_key], job, with_advice=False)
        lines.extend(headline.wrap(console, max(width, 8)))
        if job.live and job.verdict.advice:
            count = len(job.verdict.advice) if all_advice and job.job.job_key == focus else 1
            for advice in job.verdict.advice[:count]:
                lines.extend(wrapped_advice(advice, width))
    if shown.folded:
        jobs = "ended job" if shown.folded == 1 else "ended jobs"
        lines.append(Text(f"{shown.folded} {jobs}: f shows them", style="dim"))
    for problem in state.problems:
        lines.append(Text(problem, style="yellow"))
    if state.error:
        lines.append(Text(state.error, style="red"))
    return lines


def _dimmed(cells: Sequence[str | Text]) -> tuple[Text, ...]:
    out = []
    for cell in cells:
        text = cell.copy() if isinstance(cell, Text) else Text(cell)
        text.stylize("dim")
        out.append(text)
    return tuple(out)


def rank_rows(shown: ShownJobs) -> list[tuple[str, tuple[str | Text, ...]]]:
    names = job_names(shown.jobs)
    rows = []
    for job in shown.jobs:
        for rank in job.ranks:
            cells = rank_cells(names[job.job.job_key], rank.rank, rank.stats, rank.gpu_busy_share)
            rows.append((rank_key(rank.rank), cells if job.live else _dimmed(cells)))
    return rows


class RankTable(LineTable):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "sample_stacks", "Stacks", tooltip="Sample its Python stacks with py-spy")
    ]

    def __init__(self, columns: Sequence[Column] = COLUMNS) -> None:
        super().__init__(columns, id="ranks")

    def action_sample_stacks(self) -> None:
        """py-spy on the rank under the cursor and the other ranks of its job (the attach screen)."""
        key = self.cursor_key
        if key is not None:
            self.app.sample_stacks(int(key.rpartition("|")[2]))  # type: ignore[attr-defined]


class VerdictLines(TextLines):
    AUTO_HEIGHT = True

    def __init__(self) -> None:
        super().__init__(id="verdicts")
        self.shown: tuple[ShownJobs, JobsState] | None = None
        #: The job of the rank under the table's cursor: all its advice is shown.
        self.selected_job: str | None = None
        self.all_advice = True

    def build_lines(self, width: int) -> list[Text]:
        if self.shown is None:
            return []
        return verdict_lines(
            *self.shown,
            width,
            self.app.console,
            selected_job=self.selected_job,
            all_advice=self.all_advice,
        )


class JobsPane(Vertical):
    def __init__(self, no_jobs_text: str = NO_JOBS, clock: Callable[[], float] = time.monotonic) -> None:
        """``no_jobs_text``: what the pane says while it has no job to show."""
        super().__init__(id="jobs")
        self.border_title = "jobs"
        self.rank_table = RankTable()
        self.ended = EndedJobs(clock)
        self._empty = Static(no_jobs_text, id="jobs-empty")
        self.verdicts = VerdictLines()
        self.strip = StepStrip()
        self._shown: ShownJobs | None = None
        self._table_cap = _MAX_TABLE_ROWS
        self._focused_once = False  # the job table took the focus when it first showed a job
        self.fold_s, self.forget_s = ENDED_FOLD_S, ENDED_FORGET_S
        self.show_folded = False

    def compose(self):
        yield self._empty
        yield self.rank_table
        yield self.verdicts
        yield self.strip

    def on_mount(self) -> None:
        self.watch(self.rank_table, "cursor_row", self._cursor_moved, init=False)

    def show(
        self, state: JobsState | None, analysis: Analysis, fold_now: bool = False, all_advice: bool = True
    ) -> None:
        """``fold_now``: fold ended jobs at once (a short terminal keeps the live job's verdict in view);
        ``all_advice``: every advice of the selected job, else the first of each (a short terminal)."""
        if state is None or not self._empty.is_attached:  # a snapshot landed before compose or in teardown
            return
        shown = self.ended.choose(
            analysis,
            fold_s=0.0 if fold_now else self.fold_s,
            forget_s=self.forget_s,
            show_folded=self.show_folded,
        )
        has_jobs = bool(shown.jobs) or bool(shown.folded)
        if self._empty.display == has_jobs:
            self._empty.display = not has_jobs
        if self.rank_table.display != bool(shown.jobs):
            self.rank_table.display = bool(shown.jobs)
            if shown.jobs and not self._focused_once:
                # The first job came after the start, when the focus went elsewhere (the processes) or
                # nowhere: the jobs come first, so the job table takes it once and Enter opens the rank.
                self._focused_once = True
                self.rank_table.focus()
        self.rank_table.set_rows(rank_rows(shown))
        self._shown = shown
        self.verdicts.shown = (shown, state)
        self.verdicts.all_advice = all_advice
        self._show_selected()
        self._fit_table()

    def on_resize(self) -> None:
        self._fit_table()

    def _fit_table(self) -> None:
        """On a pane too short for every rank, the table scrolls and the first verdict lines stay in view
        (the verdict is what the user came for)."""
        available = self.content_size.height
        if not available:
            return
        verdict_rows = min(len(self.verdicts.lines), 2)
        cap = min(_MAX_TABLE_ROWS, max(2, available - verdict_rows))
        if cap != self._table_cap:  # set only when changed: it relayouts the pane
            self._table_cap = cap
            self.rank_table.styles.max_height = cap

    def natural_rows(self) -> int:
        """Rows the pane needs before its step strip: border, message or table, verdict lines."""
        rows = 1 + (1 if self._empty.display else 0) + len(self.verdicts.lines)
        if self.rank_table.display:
            rows += min(self.rank_table.row_count + 1, _MAX_TABLE_ROWS)
        return rows

    def _cursor_moved(self) -> None:
        if self._shown is not None:
            self._show_selected()

    def _show_selected(self) -> None:
        """The verdicts (all advice of the cursor's job) and the step strip of the cursor's rank."""
        shown = self._shown
        key = self.rank_table.cursor_key
        selected = None
        if shown is not None and key is not None:
            names = job_names(shown.jobs)
            selected = next(
                ((job, rank) for job in shown.jobs for rank in job.ranks if rank_key(rank.rank) == key), None
            )
        if selected is None:
            self.verdicts.selected_job = None
            self.strip.show(None, "")
        else:
            job, rank = selected
            self.verdicts.selected_job = job.job.job_key
            self.strip.show(rank.rank, names[job.job.job_key])
        self.verdicts.update_lines()

    def on_line_table_row_selected(self, event: LineTable.RowSelected) -> None:
        from xfertop.ui.job_detail import JobDetailScreen

        job_key, _, pid = event.key.rpartition("|")
        self.app.push_screen(JobDetailScreen(job_key, int(pid)))
