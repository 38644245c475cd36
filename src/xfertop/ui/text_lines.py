"""Panes drawn line by line on Textual's Line API: only the rows whose text changed are rendered again.

A ``TextLines`` widget shows ``build_lines(width)``, one Rich ``Text`` per row. ``update_lines()`` builds
them again, compares them with the rows shown and refreshes only the cells of the rows that differ
(``refresh(Region)``; changed_cells, since Textual writes each refreshed region to the terminal whole);
``render_line`` turns a row into a ``Strip`` once and keeps it, keyed by the row's text and the widget's
width and style (Toolong's way: textual:docs/guide/widgets.md "Line API"). A row
longer than the widget is cut, never wrapped. A row may also be ``Pieces``, (text, style) pairs turned
into a strip's segments directly (charts: tens of rows that all change each period, where going through
Rich's Text rendering costs most of a frame). Textual's ANSI-to-truecolour filter is applied here, once
per style or per row made, instead of by Textual to every segment of every row drawn again (on the step
strip, whose rows all change each period, that filter was a fifth of the view's main thread).
Everything here is Textual's public API.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from rich.cells import cell_len
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.cache import LRUCache
from textual.color import Color
from textual.filter import ANSIToTruecolor, LineFilter
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widget import Widget

#: A row as (text, Rich style string) pairs: cheaper than a Text where every row changes every period.
Pieces = tuple[tuple[str, str], ...]
Row = Text | Pieces


def pieces_text(pieces: Pieces) -> Text:
    return Text.assemble(*pieces)


class StyleCache:
    """Rich style strings parsed once and combined with a widget's base style once; with ``truecolor``
    (Textual's ANSI-to-truecolour filter and the widget's background), converted once too."""

    def __init__(self) -> None:
        self._combined: dict[tuple[Style, str], Style] = {}
        self.truecolor: tuple[ANSIToTruecolor, Color] | None = None

    def clear(self) -> None:
        self._combined.clear()

    def on(self, base: Style, style: str, console: Console) -> Style:
        found = self._combined.get((base, style))
        if found is None:
            found = base + console.get_style(style) if style else base
            if self.truecolor is not None:
                truecolor, background = self.truecolor
                found = truecolor.truecolor_style(found, background.rich_color)
            self._combined[(base, style)] = found
        return found


def pieces_strip(pieces: Pieces, width: int, base: Style, console: Console, styles: StyleCache) -> Strip:
    """One row of ``pieces`` on ``base``, cut or padded to ``width`` cells."""
    segments = [Segment(text, styles.on(base, style, console)) for text, style in pieces if text]
    length = sum(cell_len(text) for text, _ in pieces)
    if length == width:  # a chart row: built to the width, nothing to cut or pad
        return Strip(segments, width)
    return Strip(segments, length).crop_extend(0, width, styles.on(base, "", console))


def row_key(row: Row) -> Hashable:
    return row if isinstance(row, tuple) else text_key(row)


def text_strip(text: Text, width: int, base: Style, console: Console) -> Strip:
    """One row of ``text`` on ``base`` (the widget's style), cut or padded to ``width`` cells."""
    text = text.copy()
    text.stylize_before(base)
    text.no_wrap, text.overflow = True, "crop"
    return Strip(text.render(console, end=""), text.cell_len).crop_extend(0, width, base)


def text_key(text: Text) -> Hashable:
    """What a row shows, hashable and compared by value."""
    return (text.plain, tuple(text.spans), str(text.style))


def changed_cells(old: Row, new: Row) -> tuple[int, int] | None:
    """The cells ``[first, end)`` in which row ``new`` differs from row ``old`` (the row object shown before:
    a pane must build new rows, not change a shown one in place); None where that cannot be told cheaply
    (a wide character, a base style that changed, styles that differ outside the changed text). Only those
    cells are refreshed: Textual sends each refreshed region's span to the terminal whole, and a clock's
    seconds or one figure of a table row then cost a few cells, not the row's width."""
    if isinstance(old, tuple) and isinstance(new, tuple):
        return _changed_pieces(old, new)
    if isinstance(old, tuple) or isinstance(new, tuple) or old.style != new.style:
        return None
    before, after = old.plain, new.plain
    if cell_len(before) != len(before) or cell_len(after) != len(after):
        return None
    first = _common_prefix(before, after)
    if len(before) != len(after):  # what follows the change moved: every cell from it on
        end = max(len(before), len(after))
    else:
        end = len(after) - _common_prefix(before[first:][::-1], after[first:][::-1])
    if _spans_within(old, 0, first) != _spans_within(new, 0, first):
        return None
    if _spans_within(old, end, len(before)) != _spans_within(new, end, len(after)):
        return None
    return first, max(end, first + 1)


def _common_prefix(a: str, b: str) -> int:
    limit = min(len(a), len(b))
    index = 0
    while index < limit and a[index] == b[index]:
        index += 1
    return index


def _spans_within(text: Text, start: int, end: int) -> list[tuple[int, int, object]]:
    """``text``'s spans cut to ``[start, end)``, as offsets from ``start``."""
    return [
        (max(span.start, start) - start, min(span.end, end) - start, span.style)
        for span in text.spans
        if span.start < end and span.end > start
    ]


def _changed_pieces(old: Pieces, new: Pieces) -> tuple[int, int] | None:
    """changed_cells of two rows of pieces: equal pieces from either end, then the text both ends share
    within the first and last pieces that differ where their style is the same."""
    for text, _ in (*old, *new):
        if cell_len(text) != len(text):
            return None
    first = index = 0
    while index < min(len(old), len(new)) and old[index] == new[index]:
        first += len(old[index][0])
        index += 1
    if index < len(old) and index < len(new) and old[index][1] == new[index][1]:
        first += _common_prefix(old[index][0], new[index][0])
    length_old, length_new = sum(len(t) for t, _ in old), sum(len(t) for t, _ in new)
    if length_old != length_new:
        return first, max(length_old, length_new, first + 1)
    end, back = length_new, 1
    while back <= min(len(old), len(new)) - index and old[-back] == new[-back]:
        end -= len(new[-back][0])
        back += 1
    if back <= min(len(old), len(new)) - index and old[-back][1] == new[-back][1]:
        end -= _common_prefix(old[-back][0][::-1], new[-back][0][::-1])
    return first, max(end, first + 1)


class TextLines(Widget):
    """A widget showing ``build_lines(width)``: one Text per row, repainted row by row."""

    #: Whether the widget is as tall as its lines (``height: auto`` in its CSS).
    AUTO_HEIGHT = False

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._lines: list[Row] = []
        self._keys: list[Hashable] = []
        self._built_width = -1
        self._base: Style | None = None
        self._strips: LRUCache[tuple, Strip] = LRUCache(256)
        self._styles = StyleCache()

    def build_lines(self, width: int) -> Sequence[Row]:
        raise NotImplementedError

    def get_line_filters(self) -> Sequence[LineFilter]:
        """The app's filters but the ANSI-to-truecolour one, which ``render_line`` applies to the strips it
        keeps: Textual's drawing then passes them on as they are."""
        filters = super().get_line_filters()
        truecolor = next((found for found in filters if isinstance(found, ANSIToTruecolor)), None)
        kept = self._styles.truecolor[0] if self._styles.truecolor else None
        if truecolor is not kept:  # turned on or off, or a new theme's: every strip is made again
            self._forget_strips()
            self._styles.truecolor = None if truecolor is None else (truecolor, self.background_colors[1])
        return [found for found in filters if found is not truecolor]

    @property
    def lines(self) -> list[Text]:
        """The rows shown (what tests and the plain-text view read)."""
        return [pieces_text(line) if isinstance(line, tuple) else line for line in self._lines]

    def render(self) -> Text:
        rows = self.build_lines(self.content_size.width)
        return Text("\n").join(pieces_text(row) if isinstance(row, tuple) else row for row in rows)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if width != self._built_width:
            self._set_lines(self.build_lines(width), width)
        return max(len(self._lines), 1)

    def on_resize(self) -> None:
        self.update_lines()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._forget_strips()  # the theme or the widget's colours changed: every strip is drawn again
        if self._styles.truecolor is not None:
            self._styles.truecolor = (self._styles.truecolor[0], self.background_colors[1])

    def _forget_strips(self) -> None:
        self._base = None
        self._strips.clear()
        self._styles.clear()

    def update_lines(self) -> None:
        """Build the lines from the app's data again; repaint only the rows whose text changed."""
        if not self.is_mounted:
            return
        width = self.content_size.width
        old_count = len(self._lines)
        changed = self._set_lines(self.build_lines(width), width)
        if self.AUTO_HEIGHT and len(self._lines) != old_count:
            self.refresh(layout=True)
        elif changed:
            self.refresh(
                *(Region(x0, y, min(x1, width) - x0, 1) for y, x0, x1 in changed if x0 < min(x1, width))
            )

    def _set_lines(self, lines: Sequence[Row], width: int) -> list[tuple[int, int, int]]:
        """Take ``lines`` as the rows shown: the rows that changed, each with the cells that did
        (``(y, first, end)``: the whole width where a span cannot be told)."""
        keys = [row_key(line) for line in lines]
        same_width = width == self._built_width
        old_lines, old_keys = (self._lines, self._keys) if same_width else ([], [])
        changed = []
        for y in range(max(len(old_keys), len(keys))):
            if y >= len(old_keys) or y >= len(keys):
                changed.append((y, 0, width))
            elif old_keys[y] != keys[y]:
                first, end = changed_cells(old_lines[y], lines[y]) or (0, width)
                changed.append((y, first, end))
        self._lines, self._keys, self._built_width = list(lines), keys, width
        return changed

    def render_line(self, y: int) -> Strip:
        width = self.content_size.width
        if width != self._built_width:
            self._set_lines(self.build_lines(width), width)
        base = self._base
        if base is None:
            base = self._base = self.rich_style
        if y >= len(self._lines):
            blank = Strip.blank(width, base)
            return blank.apply_filter(*self._styles.truecolor) if self._styles.truecolor else blank
        key = (self._keys[y], width)
        strip = self._strips.get(key)
        if strip is None:
            line = self._lines[y]
            if isinstance(line, tuple):
                strip = pieces_strip(line, width, base, self.app.console, self._styles)
            else:
                strip = text_strip(line, width, base, self.app.console)
                if self._styles.truecolor is not None:
                    strip = strip.apply_filter(*self._styles.truecolor)
            self._strips[key] = strip
        return strip
