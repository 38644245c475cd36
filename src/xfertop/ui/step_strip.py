"""Where one rank's step time went over the last minutes: a strip of time buckets, so starvation that
comes and goes shows as a share of wait that rises and falls from row to row instead of one averaged
share.

Each row is a bucket of a few seconds (the shortest of ``BUCKET_STEPS_S`` whose rows cover
``COVER_S``; shorter while the history is younger than the rows would cover, so that a job just started
fills the strip within its first ``rows`` seconds, not ``rows`` buckets), the newest at the bottom; its
bar stacks the host's step parts (rank_row.SEGMENTS: wait, loop, copy, model, sync) as shares of the
time of the steps that began in it, each in its letter as well as its colour, like the jobs table's bar.
The row's label says how long before the newest bucket it began and how many steps it holds. The sums
come from the app's ViewState (analysis.step_timeline.StepTimeline, one per rank). Between two drawings
only the newest bucket's row changes; when a bucket closes every row moves up one, which the strip's
shorter rows of its first minutes would do every second or two: it is then drawn every few seconds. The
strip takes the rows the jobs pane leaves (xfertop.tcss) and shows the rank under the jobs table's
cursor.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass

from rich.text import Text
from textual.timer import Timer

from xfertop.analysis.step_timeline import StepBucket, StepTimeline
from xfertop.model.jobs import RankState
from xfertop.ui import chart
from xfertop.ui.rank_row import SEGMENTS, legend, rank_label
from xfertop.ui.text_lines import Pieces, Row, TextLines

#: From this many rows the strip has a title above its rows.
_FRAMED_ROWS = 4
#: The strip is drawn at most this often, however fast the view refreshes: its newest row changes with
#: each snapshot's steps.
DRAW_PERIOD_S = 1.0
#: While the rows are shorter than those that cover ``COVER_S`` (a history of under two minutes: rows of 1
#: or 2 s), a new bucket opens every second or two and every row moves up one: the strip is then drawn at
#: most this often. On an H100 at 1 Hz the view's main thread took 8.24 ms of CPU a second 15 s after
#: its start and 6.02 from 130 s (session 37, docs/ui.md): that difference is the young strip's.
YOUNG_DRAW_PERIOD_S = 5.0
#: The view repaints once a period, a few ms early or late: a repaint from this share of the strip's
#: period on draws it (waiting for the exact period drew it on a timer a moment after the repaint, a
#: screen update of its own: ~1.5 drawings a second at 1 Hz). The timer, at the later share, draws new
#: steps only when no repaint comes.
_EARLY_SHARE, _CATCH_UP_SHARE = 0.75, 1.5
#: Seconds a row may stand for, and how much time the rows should cover at least. The steps below
#: ``_COVERING_STEPS_S`` serve only while the history is young: a row a second moves every row at each
#: drawing, which costs the view more than a newest row that alone changes for a few drawings.
BUCKET_STEPS_S = (1, 2, 5, 10, 15, 30, 60)
_COVERING_STEPS_S = BUCKET_STEPS_S[2:]
COVER_S = 90
_AGO_CELLS, _COUNT_CELLS = 6, 6


def bucket_seconds(rows: int, history_s: int | None = None) -> int:
    """Seconds a row stands for on a strip of ``rows`` rows: the shortest step covering ``COVER_S``; with
    ``history_s`` (the seconds of steps kept) shorter than those rows would cover, the longest step
    whose rows the history still fills, one second at least (a job seen for 20 s on 30 rows: 20 rows of
    a second, where 5 s rows would leave 26 of the 30 blank)."""
    covering = next(
        (seconds for seconds in _COVERING_STEPS_S if rows * seconds >= COVER_S), _COVERING_STEPS_S[-1]
    )
    if history_s is None:
        return covering
    filled = [seconds for seconds in BUCKET_STEPS_S if seconds <= covering and rows * seconds <= history_s]
    return filled[-1] if filled else BUCKET_STEPS_S[0]


def ago_text(seconds: int, newest: str = "now") -> str:
    """How long before the newest bucket a bucket began: "now" (``newest``: "end" for a job that ended,
    whose newest bucket is its last, not now), "-35s", "-2m05"."""
    if seconds <= 0:
        return newest
    if seconds < 60:
        return f"-{seconds}s"
    return f"-{seconds // 60}m{seconds % 60:02d}"


def count_text(count: int) -> str:
    """A bucket's step count in at most 5 cells: 98, 4123, 41k, 412k."""
    return str(count) if count < 10_000 else f"{count // 1000}k"


@functools.lru_cache(maxsize=512)
def bucket_row(bucket: StepBucket | None, ago_s: int, width: int, newest: str = "now") -> Pieces:
    """One row ``width`` cells wide: the label (how long ago, steps), then the bucket's parts stacked
    left to right; "no step began" for a bucket without steps. Kept: between two drawings every row but
    the newest is built from the same closed bucket at the same age (a strip of 23 rows built anew each
    second was 7% of the view's main thread on an H100 at 1 Hz, session 38)."""
    label = (
        f"{ago_text(ago_s, newest):>{_AGO_CELLS}}{count_text(bucket.steps if bucket else 0):>{_COUNT_CELLS}} "
    )
    bar_width = max(width - len(label), 0)
    if bucket is None:
        return ((label, "dim"), ("no step began".ljust(bar_width)[:bar_width], "dim"))
    shares = [
        (share, letter, style) for share, (_, letter, style) in zip(bucket.shares(), SEGMENTS, strict=True)
    ]
    return ((label, "dim"), *chart.stacked(shares, bar_width))


def strip_title(who: str, seconds: int, width: int) -> Text:
    """The strip's title and its legend in ``width`` cells: the longest wording that fits whole, the
    legend always (a new user's trial found the legend cut at every size: "W wait  L loop  C" at 120
    columns, the title without its closing parenthesis at 80)."""
    key = legend()
    key.rstrip()  # its trailing gap, which the width need not hold
    wordings = (
        f"where each step went: {who}, a row per {seconds} s (how long ago, steps), newest at the bottom  ",
        f"where each step went: {who}, a row per {seconds} s, newest last  ",
        f"{who}, a row per {seconds} s  ",
        "",
    )
    words = next((w for w in wordings if len(w) + key.cell_len <= width), "")
    title = Text(words, style="bold")
    title.append_text(key)
    title.rstrip()
    title.truncate(width)
    return title


@dataclass(frozen=True)
class ShownBuckets:
    """What one drawing of the strip shows: its buckets, oldest first, and where they stand."""

    seconds: int
    #: The newest bucket's start and the first second the timeline kept, on the steps' clock.
    last_start: int
    oldest_s: int
    buckets: tuple[StepBucket | None, ...]


def shown_buckets(timeline: StepTimeline, rows: int) -> ShownBuckets | None:
    """The last ``rows`` buckets of ``timeline`` (None before its first step)."""
    newest, oldest = timeline.newest_s, timeline.oldest_s
    if newest is None or oldest is None:
        return None
    seconds = bucket_seconds(rows, newest - oldest + 1)
    buckets = tuple(timeline.buckets(seconds, rows))
    return ShownBuckets(seconds, newest - newest % seconds, oldest, buckets)


def strip_rows(shown: ShownBuckets, width: int, newest: str = "now") -> list[Pieces]:
    """One row per bucket, newest at the bottom (labelled ``newest``); blank rows for buckets before the
    first second kept."""
    seconds, count = shown.seconds, len(shown.buckets)
    lines: list[Pieces] = []
    for index, bucket in enumerate(shown.buckets):
        start = shown.last_start - (count - 1 - index) * seconds
        if start + seconds <= shown.oldest_s:
            lines.append(())  # before the history began
        else:
            lines.append(bucket_row(bucket, shown.last_start - start, width, newest))
    return lines


class StepStrip(TextLines):
    """The strip of one rank (``show``), as tall as the widget; nothing while no rank is shown."""

    def __init__(self) -> None:
        super().__init__(id="step-strip")
        self.rank: RankState | None = None
        self.job_name = ""
        self._drawn_at = float("-inf")
        self._catch_up: Timer | None = None
        self._next: tuple[RankState | None, str] = (None, "")
        #: The buckets of the last drawing: redrawn as they were (a resize, a layout) until the next one.
        self._shown: ShownBuckets | None = None

    def show(self, rank: RankState | None, job_name: str) -> None:
        """Show ``rank``: at once for another rank, else with the view's first repaint from
        ``_EARLY_SHARE`` of the strip's period (``_draw_period_s``) after the last drawing (until then a
        resize redraws what was shown), or by a timer when no repaint comes."""
        same = rank is not None and self.rank is not None and rank.ring_path == self.rank.ring_path
        self._next = (rank, job_name)
        now = time.monotonic()
        period_s = self._draw_period_s()
        if same and now - self._drawn_at < _EARLY_SHARE * period_s:
            if self._catch_up is None:
                self._catch_up = self.set_timer(self._drawn_at + _CATCH_UP_SHARE * period_s - now, self._draw)
            return
        self._draw()

    def _draw_period_s(self) -> float:
        """DRAW_PERIOD_S, or YOUNG_DRAW_PERIOD_S while the last drawing's rows were shorter than the
        covering ones."""
        shown = self._shown
        if shown is not None and shown.seconds < bucket_seconds(len(shown.buckets)):
            return max(DRAW_PERIOD_S, YOUNG_DRAW_PERIOD_S)
        return DRAW_PERIOD_S

    def _draw(self) -> None:
        if self._catch_up is not None:
            self._catch_up.stop()
            self._catch_up = None
        self.rank, self.job_name = self._next
        self._drawn_at = time.monotonic()
        self._shown = None
        self.update_lines()

    def timeline(self) -> StepTimeline | None:
        rank = self.rank
        if rank is None:
            return None
        return self.app.view.step_timelines.get(rank.ring_path)  # type: ignore[attr-defined]

    def _buckets(self, rows: int) -> ShownBuckets | None:
        shown = self._shown
        if shown is None or len(shown.buckets) != rows:
            timeline = self.timeline()
            shown = self._shown = None if timeline is None else shown_buckets(timeline, rows)
        return shown

    def build_lines(self, width: int) -> list[Row]:
        rank = self.rank
        rows = self.content_size.height
        if rank is None or rows <= 0 or width <= 0:
            return []
        framed = rows >= _FRAMED_ROWS  # a few rows still show where the time went, without a title
        newest = "end" if rank.status == "finished" else "now"  # an ended job's last second is not now
        shown = self._buckets(rows - 1 if framed else rows)
        if shown is None:
            return []
        if not framed:
            return list(strip_rows(shown, width, newest))
        who = f"rank {rank_label(rank)}" if rank.rank is not None else f"pid {rank.pid}"
        return [
            strip_title(f"{self.job_name} {who}", shown.seconds, width),
            *strip_rows(shown, width, newest),
        ]
