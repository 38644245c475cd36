"""Widgets that hand the compositor their last lines again when none of them changed.

Textual's compositor repaints the union of the dirty regions. For every widget whose clip overlaps that
union it asks for all of the widget's lines (``render_lines``) when the widget is not clipped, and keeps
only the rows being repainted. A widget's clip is its container's region, so the screen's direct children
(header, GPU area, middle row, process table, footer) and the screen itself are asked every frame, even
when their own lines are clean: each call walks the widget's ancestors for its background, looks up its
border title style and runs the app's line filters over every line (48 for the screen, ~35 for the
process table), about as much as repainting a changed row.

``QuietRender.render_lines`` returns the strips of the previous call when the same crop is asked again
at the same size and the widget's line cache (Textual's ``StylesCache``, which every refresh, style or
size change clears or marks dirty) holds the very same strips, none of them dirty. When a few rows are
dirty (a changed table row), only those rows go through Textual's render (``StylesCache`` renders the
rows of the crop it is given) and the others are the strips handed over last time: a changed row of the
processes table no longer costs a pass over all of its ~35 lines.
"""

from __future__ import annotations

from typing import Any

from textual.containers import Horizontal
from textual.geometry import Region
from textual.screen import Screen
from textual.strip import Strip
from textual.widgets import Footer, Static

from xfertop.ui.frame import FramePainted


class QuietRender:
    """Mixin, before the Widget class in the bases (see the module docstring)."""

    _quiet_last: tuple | None = None

    def render_lines(self, crop: Region) -> list[Strip]:
        cache = self._styles_cache  # type: ignore[attr-defined]
        lines = getattr(cache, "_cache", None)
        dirty = getattr(cache, "_dirty_lines", None)
        if lines is None or dirty is None:  # not the Textual this was written against
            return super().render_lines(crop)  # type: ignore[misc]
        size = self.size  # type: ignore[attr-defined]
        last = self._quiet_last
        rows = crop.line_range
        if last is None or last[0] != crop or last[1] != size:
            return self._render_and_keep(crop, size, lines)
        # The rows whose cached line is gone, replaced or marked dirty since the last call (identity).
        stale = [i for i, (y, was) in enumerate(zip(rows, last[2], strict=True))
                 if y in dirty or lines.get(y) is not was]
        if not stale:
            return list(last[3])
        if len(stale) > len(rows) // 2:
            return self._render_and_keep(crop, size, lines)
        # Only the stale rows, in runs; the others are the very strips handed over last time.
        strips = list(last[3])
        start = 0
        while start < len(stale):
            end = start
            while end + 1 < len(stale) and stale[end + 1] == stale[end] + 1:
                end += 1
            first, count = stale[start], stale[end] - stale[start] + 1
            run = Region(crop.x, crop.y + first, crop.width, count)
            strips[first:first + count] = super().render_lines(run)  # type: ignore[misc]
            start = end + 1
        self._quiet_last = (crop, size, [lines.get(y) for y in rows], strips)
        return list(strips)

    def _render_and_keep(self, crop: Region, size: object, lines: dict) -> list[Strip]:
        strips = super().render_lines(crop)  # type: ignore[misc]
        self._quiet_last = (crop, size, [lines.get(y) for y in crop.line_range], strips)
        return strips


class QuietStatic(FramePainted, QuietRender, Static):
    pass


class QuietHorizontal(QuietRender, Horizontal):
    pass


class QuietFooter(QuietRender, Footer):
    pass


class QuietScreen(QuietRender, Screen[Any]):
    pass
