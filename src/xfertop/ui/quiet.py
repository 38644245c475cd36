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
size change clears or marks dirty) holds the very same strips, none of them dirty.
"""

from __future__ import annotations

from typing import Any

from textual.containers import Horizontal
from textual.geometry import Region
from textual.screen import Screen
from textual.strip import Strip
from textual.widgets import Footer, Static


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
        if (last is not None and last[0] == crop and last[1] == size
                and not (dirty and not dirty.isdisjoint(crop.line_range))
                and list(map(lines.get, crop.line_range)) == last[2]):  # the same strips (identity first)
            return list(last[3])
        strips = super().render_lines(crop)  # type: ignore[misc]
        self._quiet_last = (crop, size, [lines.get(y) for y in crop.line_range], strips)
        return strips


class QuietStatic(QuietRender, Static):
    pass


class QuietHorizontal(QuietRender, Horizontal):
    pass


class QuietFooter(QuietRender, Footer):
    pass


class QuietScreen(QuietRender, Screen[Any]):
    pass
