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

    def get(self, key: Hashable) -> list[float | None]:
        return list(self._series.get(key, ()))
