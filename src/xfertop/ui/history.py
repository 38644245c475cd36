"""Bounded histories the UI keeps between snapshots: sources publish instants, charts need time."""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable

#: Enough points for a 240-column chart at one point per refresh.
HISTORY_POINTS = 240


class History:
    """Named series keyed by anything hashable (("gpu", 0, "rx") ...); each keeps the last points only."""

    def __init__(self, points: int = HISTORY_POINTS) -> None:
        self._points = points
        self._series: dict[Hashable, deque[float | None]] = {}

    def add(self, key: Hashable, value: float | None) -> None:
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = deque(maxlen=self._points)
        series.append(value)

    def get(self, key: Hashable) -> list[float | None]:
        return list(self._series.get(key, ()))
