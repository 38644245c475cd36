"""Bounded histories the UI keeps between snapshots: sources publish instants, charts need time."""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable

from xfertop.ui import chart

#: Enough points for a 240-column chart at one point per refresh.
HISTORY_POINTS = 240


class History:
    """Named series keyed by anything hashable (("gpu", 0, "rx") ...); each keeps the last points only."""

    def __init__(self, points: int = HISTORY_POINTS) -> None:
        self._points = points
        self._series: dict[Hashable, deque[float | None]] = {}
        self._added: dict[Hashable, int] = {}  # points ever added to each series
        #: (key, scale, width) -> (points added when drawn, chart.spark of them)
        self._sparks: dict[tuple, tuple[int, str]] = {}
        #: (key, scale, rows) -> (points added when last extended, each point's column of glyphs)
        self._columns: dict[tuple, tuple[int, deque[tuple[str, ...]]]] = {}

    def add(self, key: Hashable, value: float | None) -> None:
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = deque(maxlen=self._points)
        series.append(value)
        self._added[key] = self._added.get(key, 0) + 1

    def spark(self, key: Hashable, scale_max: float, width: int) -> str:
        """``chart.spark`` of the series, drawn once: each call after new points only shifts the last
        drawing left and adds the new points' cells (a cell depends on its value and the scale alone)."""
        added = self._added.get(key, 0)
        slot = (key, scale_max, width)
        drawn = self._sparks.get(slot)
        new = added - drawn[0] if drawn is not None else -1
        if new == 0:
            return drawn[1]  # type: ignore[index]
        series = self._series.get(key, ())
        # Shifting is exact while every shown cell is still in the series: it fills the chart, or
        # nothing was dropped from it yet (a chart wider than the series pads on the left).
        if 0 < new <= min(width, len(series)) and (len(series) >= width or added == len(series)):
            tail = [series[i] for i in range(len(series) - new, len(series))]
            line = drawn[1][new:] + chart.spark(tail, scale_max, new)  # type: ignore[index]
        else:
            line = chart.spark(list(series), scale_max, width)
        if len(self._sparks) > 64:
            self._sparks.clear()  # widths or scales came and went
        self._sparks[slot] = (added, line)
        return line

    def area(self, key: Hashable, scale_max: float, width: int, rows: int) -> list[str]:
        """``chart.area`` of the series' last ``width`` points: each point's column of glyphs is drawn once
        (it depends on its value and the scale alone) and kept while the point is in the series; a new
        frame only joins them into rows."""
        if width <= 0 or rows <= 0:
            return []
        added = self._added.get(key, 0)
        series = self._series.get(key, ())
        slot = (key, scale_max, rows)
        found = self._columns.get(slot)
        if found is None or added - found[0] > len(series):
            columns: deque[tuple[str, ...]] = deque(maxlen=self._points)
            new = list(series)
        else:
            columns = found[1]
            new = [series[i] for i in range(len(series) - (added - found[0]), len(series))]
        columns.extend(chart.column(value, scale_max, rows) for value in new)
        if len(self._columns) > 64:
            self._columns.clear()  # scales or heights came and went
        self._columns[slot] = (added, columns)
        shown = list(columns)[-width:]
        pad = width - len(shown)
        if not shown:
            return [" " * width] * rows
        return [" " * pad + "".join(row) for row in zip(*shown, strict=True)]

    def recent_max(self, key: Hashable, points: int) -> float:
        """The largest of the series' last ``points`` values (0 when none): what an autoscaled chart
        ``points`` wide shows."""
        series = self._series.get(key, ())
        start = max(len(series) - points, 0)
        return max((v for i in range(start, len(series)) if (v := series[i]) is not None), default=0.0)

    def get(self, key: Hashable) -> list[float | None]:
        return list(self._series.get(key, ()))
