"""Panes drawn line by line from Rich ``Text``: only the lines whose text changed are re-rendered.

A plain Textual widget re-renders all of its content on every ``refresh()``: its ``render()`` result goes
through Textual's Content pipeline (style conversion, wrapping, one Rich style per segment with its
offset), ~0.2 ms for a GPU pane's two lines on a free core and ~1 ms on a loaded one, every period, for
every pane. A ``LineView`` keeps the lines it drew: ``update_lines()`` rebuilds them (``build_lines``),
compares them with the last ones and repaints only the rows that differ; a row that differs is turned
into a ``Strip`` directly (``text_strip``), with the styles Textual's own pipeline would give it (the
same conversion of Rich styles to the app's theme colours, on the widget's CSS colour and background),
cached per distinct combination. A line longer than the widget is cut, never wrapped.

Mouse text selection is off in these panes (it needs per-cell offsets in every style, the cost this
avoids); the terminal's own selection (shift+drag in most terminals) still works.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Sequence

from rich.segment import Segment
from rich.style import Style as RichStyle
from rich.text import Span, Text
from textual.geometry import Region
from textual.strip import Strip
from textual.style import Style
from textual.widget import Widget

from xfertop.ui.frame import FramePainted
from xfertop.ui.quiet import QuietRender


class StripStyles:
    """Rich span styles -> the Rich styles Textual paints for them on a base (widget) style, cached."""

    def __init__(self) -> None:
        self._parsed: dict[Hashable, Style] = {}
        self._combined: dict[tuple, RichStyle] = {}

    def clear(self) -> None:
        self._parsed.clear()
        self._combined.clear()

    def parse(self, widget: Widget, style: str | RichStyle | _Whole) -> Style:
        key = (type(style), style)  # _Whole("dim") == "dim" but parses differently
        parsed = self._parsed.get(key)
        if parsed is None:
            parsed = self._parsed[key] = _parse(widget, style)
        return parsed

    def combined(self, widget: Widget, base: Style, styles: tuple) -> RichStyle:
        """What Textual's Content.render + to_strip give: the base under the spans, then the base again."""
        key = (base, styles)
        found = self._combined.get(key)
        if found is None:
            text_style = Style.combine([base, *(self.parse(widget, style) for style in styles)])
            found = self._combined[key] = (base + text_style).rich_style
        return found


class _Whole(str):
    """A Text's own style given as a string: Textual parses it with its CSS-aware parser, not Rich's."""


def _parse(widget: Widget, style: str | RichStyle) -> Style:
    """As Content.from_rich_text and Content.render convert a span's style."""
    app = widget.app
    if isinstance(style, _Whole):
        return widget._get_style(str(style))
    rich_style = app.console.get_style(style) if isinstance(style, str) else style
    return Style.from_rich_style(rich_style, app.ansi_theme)


def text_strip(widget: Widget, text: Text, width: int, base: Style, styles: StripStyles) -> Strip:
    """One line of ``text`` (no wrapping: cut at ``width``) as Textual would paint it on ``base``."""
    plain = text.plain
    spans = list(text._spans)
    if text.style:  # below every span, as Content.stylize_before puts it
        whole = _Whole(text.style) if isinstance(text.style, str) else text.style
        spans.insert(0, Span(0, len(plain), whole))
    if not spans:
        segments = [Segment(plain, styles.combined(widget, base, ()))] if plain else []
        return Strip(segments).crop(0, width)
    # Span boundaries in order; at each, the styles of the spans open there (in span order) apply.
    events = sorted({0, len(plain), *(s.start for s in spans), *(s.end for s in spans)})
    segments = []
    for start, end in itertools.pairwise(events):
        if start >= end or start >= len(plain):
            continue
        active = tuple(s.style for s in spans if s.start <= start and s.end > start)
        segments.append(Segment(plain[start:end], styles.combined(widget, base, active)))
    return Strip(segments).crop(0, width)


class LineView(FramePainted, QuietRender, Widget):
    """A widget showing ``build_lines(width)``: one Text per row, repainted row by row."""

    ALLOW_SELECT = False

    def __init__(self, *args, **kwargs) -> None:
        self._lines: list[Text] | None = None  # None: build them at the next paint
        self._lines_width = -1
        self._lines_key: Hashable = None  # what the lines were built from, where lines_key says it
        self._strips: dict[int, Strip] = {}
        self._strip_key: tuple | None = None
        self._strip_styles = StripStyles()
        super().__init__(*args, **kwargs)

    def build_lines(self, width: int) -> Sequence[Text]:
        raise NotImplementedError

    def lines_key(self, width: int) -> Hashable:
        """Optional: a cheap value that changes whenever ``build_lines`` would (None: always rebuild)."""
        return None

    def render(self) -> Text:
        """The lines as one Text (what tests and the command palette read; painting uses the lines)."""
        return Text("\n").join(self.build_lines(self.content_size.width))

    def refresh(self, *regions: Region, **kwargs) -> LineView:
        """A whole-widget refresh (from the app, a style or size change) rebuilds every line."""
        if not regions and kwargs.get("repaint", True):
            self._lines = None
            self._strips.clear()
        super().refresh(*regions, **kwargs)
        return self

    def update_lines(self) -> None:
        """Rebuild the lines from the app's data; repaint only the rows whose text changed."""
        width = self.content_size.width
        if self._lines is None or width != self._lines_width or not self.is_mounted:
            self.refresh()
            return
        key = self.lines_key(width)
        if key is not None and key == self._lines_key:
            return
        self._lines_key = key
        old, lines = self._lines, list(self.build_lines(width))
        self._lines = lines
        changed = [y for y in range(max(len(old), len(lines)))
                   if y >= len(old) or y >= len(lines) or old[y] != lines[y]]
        for y in changed:
            self._strips.pop(y, None)
        if changed:
            super().refresh(*(Region(0, y, width, 1) for y in changed))

    def render_line(self, y: int) -> Strip:
        width = self.content_size.width
        base = self.visual_style
        key = (width, base)
        if key != self._strip_key:
            self._strip_key = key
            self._strips.clear()
        if self._lines is None or width != self._lines_width:
            self._lines_key = self.lines_key(width)
            self._lines = list(self.build_lines(width))
            self._lines_width = width
            self._strips.clear()
        strip = self._strips.get(y)
        if strip is None:
            if y < len(self._lines):
                strip = text_strip(self, self._lines[y], width, base, self._strip_styles)
            else:
                strip = Strip.blank(width, base.rich_style)
            self._strips[y] = strip
        return strip

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strip_styles.clear()  # the theme (and so the colours styles map to) may have changed
        self._strips.clear()
