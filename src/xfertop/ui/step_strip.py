"""Where each recent step of one rank went: a stacked strip over steps, so starvation that comes and
goes shows as a floor of wait that rises and falls instead of one averaged share.

Each column is one step, the newest on the right; its cells, from the bottom, are the host's step parts
(rank_row.SEGMENTS: wait, loop, copy, model, sync) in proportion to the step's wall time, each in its
letter as well as its colour, like the jobs table's bar. The strip takes the rows the jobs pane leaves
(xfertop.tcss) and shows the rank under the jobs table's cursor.
"""

from __future__ import annotations

import time
from itertools import groupby
from operator import itemgetter

from rich.text import Text
from textual.timer import Timer

from xfertop.model.jobs import RankState, StepRecord
from xfertop.ui import chart
from xfertop.ui.rank_row import SEGMENTS, legend, rank_label
from xfertop.ui.text_lines import Pieces, Row, TextLines

_TOP_LABEL = "100%"
#: From this many rows the strip has a title and a step axis around its plot.
_FRAMED_ROWS = 4
#: The strip is a history: new steps are drawn at most this often, however fast the view refreshes.
#: Each drawing moves every row of it (at 4 Hz that was a third of the view's main thread).
DRAW_PERIOD_S = 1.0


def step_parts_ms(step: StepRecord) -> tuple[float, float, float, float, float]:
    """The step's wall time in ``SEGMENTS`` order: wait, loop (before and after the model), copy,
    model, sync."""
    return (
        step.data_wait_ms,
        step.loop_pre_ms + step.loop_post_ms,
        step.copy_cpu_ms,
        step.model_ms,
        step.sync_ms,
    )


def step_column(step: StepRecord, rows: int) -> list[tuple[str, str]]:
    """One step's cells, top row first: its parts stacked from the bottom, "·" above them if the parts
    fall short of its wall time."""
    wall = step.wall_ms
    shares = [
        (part / wall if wall > 0 else 0.0, letter, style)
        for part, (_, letter, style) in zip(step_parts_ms(step), SEGMENTS, strict=True)
    ]
    cells = [(letter, style) for text, style in chart.stacked(shares, rows) for letter in text]
    return cells[::-1]


def strip_rows(
    steps: tuple[StepRecord, ...], width: int, rows: int, made: dict[int, list[tuple[str, str]]] | None = None
) -> list[Pieces]:
    """``rows`` rows ``width`` cells wide: the last ``width`` steps as stacked columns, padded on the left.
    ``made``: columns already made for these ``rows``, by step number (a step's parts never change once
    it is written), kept to the steps shown."""
    shown = steps[-width:] if width > 0 else ()
    if made is None:
        columns = [step_column(step, rows) for step in shown]
    else:
        columns = [made.get(step.step) or step_column(step, rows) for step in shown]
        made.clear()
        made.update(zip((step.step for step in shown), columns, strict=True))
    pad = width - len(columns)
    lines: list[Pieces] = []
    for cells in zip(*columns, strict=True) if columns else [()] * rows:
        pieces: list[tuple[str, str]] = [(" " * pad, "")] if pad else []
        for style, run in groupby(cells, key=itemgetter(1)):  # a piece per run of one style
            text = "".join([letter for letter, _ in run])
            if pieces and pieces[-1][1] == style:
                pieces[-1] = (pieces[-1][0] + text, style)
            else:
                pieces.append((text, style))
        lines.append(tuple(pieces))
    return lines


class StepStrip(TextLines):
    """The strip of one rank (``show``), as tall as the widget; nothing while no rank is shown."""

    def __init__(self) -> None:
        super().__init__(id="step-strip")
        self.rank: RankState | None = None
        self.job_name = ""
        #: Columns made for the rank and height they were made for: only new steps' columns are made
        #: at a repaint (making them all was half the view's CPU at 4 Hz).
        self._columns: dict[int, list[tuple[str, str]]] = {}
        self._columns_for: tuple[str, int] = ("", 0)
        self._drawn_at = float("-inf")
        self._catch_up: Timer | None = None
        self._next: tuple[RankState | None, str] = (None, "")

    def show(self, rank: RankState | None, job_name: str) -> None:
        """Show ``rank``: at once for another rank, else within ``DRAW_PERIOD_S`` of the last drawing
        (until then a resize redraws what was shown)."""
        same = rank is not None and self.rank is not None and rank.ring_path == self.rank.ring_path
        self._next = (rank, job_name)
        wait_s = self._drawn_at + DRAW_PERIOD_S - time.monotonic()
        if same and wait_s > 0:
            if self._catch_up is None:
                self._catch_up = self.set_timer(wait_s, self._draw)
            return
        self._draw()

    def _draw(self) -> None:
        if self._catch_up is not None:
            self._catch_up.stop()
            self._catch_up = None
        self.rank, self.job_name = self._next
        self._drawn_at = time.monotonic()
        self.update_lines()

    def _made(self, rank: RankState, rows: int) -> dict[int, list[tuple[str, str]]]:
        if self._columns_for != (rank.ring_path, rows):
            self._columns_for = (rank.ring_path, rows)
            self._columns = {}
        return self._columns

    def build_lines(self, width: int) -> list[Row]:
        rank = self.rank
        rows = self.content_size.height
        if rank is None or not rank.steps or rows <= 0 or width <= 0:
            return []
        if rows < _FRAMED_ROWS:  # a few rows still show where the steps went
            return list(strip_rows(rank.steps, width, rows, self._made(rank, rows)))
        label_width = len(_TOP_LABEL)
        plot_width = max(width - label_width - 1, 0)
        plot_rows = rows - 2
        shown = rank.steps[-plot_width:] if plot_width else ()
        who = f"rank {rank_label(rank)}" if rank.rank is not None else f"pid {rank.pid}"
        title = Text(f"where each step went: {self.job_name} {who}, newest on the right  ")
        title.stylize("bold")
        title.append_text(legend())
        title.truncate(width)
        lines: list[Row] = [title]
        for index, plot in enumerate(
            strip_rows(rank.steps, plot_width, plot_rows, self._made(rank, plot_rows))
        ):
            label = _TOP_LABEL if index == 0 else "0" if index == plot_rows - 1 else ""
            left = label.rjust(label_width) + ("┤" if label else "│")
            lines.append(((left, "dim"), *plot))
        axis = ""
        if shown:
            # Under the steps drawn, or, for too few to hold the labels, the newest named at the right.
            newest = f"step {shown[-1].step}"
            wide = len(shown) > len(newest) * 2 + 1
            axis = chart.step_axis(len(shown), shown[0].step, shown[-1].step) if wide else newest
            axis = axis.rjust(plot_width)[-plot_width:] if plot_width else ""
        lines.append(((" " * label_width + "└", "dim"), (axis, "dim")))
        return lines
