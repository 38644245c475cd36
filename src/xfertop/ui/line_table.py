"""A table on Textual's Line API: one line per row, a row cursor, columns dropped whole by priority.

Rows are keyed; ``set_rows`` compares each row with the one shown and refreshes only the rows that
changed (``refresh(Region)``), and each row's strip is kept, keyed by its cells, the column widths and
whether the cursor is on it. A column is as wide as its widest value (and its header) and only grows
while the same rows are shown, so figures that move do not make the columns jitter. When the columns do
not fit, the one with the highest ``drop_order`` goes first, whole, never cut mid-word; the ``fill``
column (a command line) takes what is left and is cut with an ellipsis. The header stays on top while
the rows scroll. Public Textual API only (ScrollView, render_line, component classes, bindings).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from xfertop.ui.text_lines import text_key, text_strip

Cell = str | Text


@dataclass(frozen=True)
class Column:
    name: str
    #: Which columns go first when the table is too wide: the highest first; 0 never goes.
    drop_order: int = 0
    #: Takes the width the others leave (and is cut with an ellipsis when that is too little).
    fill: bool = False
    #: Never narrower than this (the header's width at least).
    min_width: int = 0


def _cell_text(cell: Cell) -> Text:
    return cell if isinstance(cell, Text) else Text(cell)


def _cell_width(cell: Cell) -> int:
    return cell.cell_len if isinstance(cell, Text) else cell_len(cell)


def _fitted(cell: Cell, width: int) -> Text:
    """The cell cut with an ellipsis or padded to ``width`` cells."""
    text = _cell_text(cell).copy()
    if text.cell_len > width:
        text.truncate(width, overflow="ellipsis")
    text.pad_right(width - text.cell_len)
    return text


def choose_columns(columns: Sequence[Column], widths: Sequence[int], room: int) -> tuple[int, ...]:
    """Indices of the columns shown in ``room`` cells (each takes its width plus 2 of padding): the
    columns with the highest ``drop_order`` are left out, whole, until the others fit."""
    shown = list(range(len(columns)))
    needed = lambda: sum(  # noqa: E731
        (columns[i].min_width if columns[i].fill else widths[i]) + 2 for i in shown
    )
    while needed() > room:
        droppable = [i for i in shown if columns[i].drop_order > 0]
        if not droppable:
            break
        shown.remove(max(droppable, key=lambda i: (columns[i].drop_order, i)))
    return tuple(shown)


class LineTable(ScrollView, can_focus=True):
    """Rows of cells under a header; Enter on a row posts ``LineTable.RowSelected``."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"line-table--header", "line-table--cursor"}
    DEFAULT_CSS = """
    LineTable {
        height: auto;
        max-height: 100%;
        background: $surface;
        & > .line-table--header { text-style: bold; background: $panel; }
        &:focus > .line-table--cursor {
            background: $block-cursor-background;
            color: $block-cursor-foreground;
            text-style: $block-cursor-text-style;
        }
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "cursor(-10)", "Page up", show=False),
        Binding("pagedown", "cursor(10)", "Page down", show=False),
        Binding("home", "cursor(-1000000)", "First", show=False),
        Binding("end", "cursor(1000000)", "Last", show=False),
        Binding("enter", "select", "Detail", show=False),
    ]

    cursor_row: reactive[int] = reactive(0, init=False)

    class RowSelected(Message):
        def __init__(self, table: LineTable, key: str) -> None:
            super().__init__()
            self.table, self.key = table, key

        @property
        def control(self) -> LineTable:
            return self.table

    def __init__(
        self, columns: Sequence[Column], *, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(id=id, classes=classes)
        self._columns: tuple[Column, ...] = tuple(columns)
        self._keys: list[str] = []
        self._rows: dict[str, tuple[Cell, ...]] = {}
        self._row_keys: dict[str, Hashable] = {}
        self._widths: list[int] = [max(cell_len(c.name), c.min_width) for c in self._columns]
        self._layout: tuple = ()
        self._strips: LRUCache[tuple, Strip] = LRUCache(512)
        #: Each cell's segments, by (its value, width, style): the cells a row shares with the last.
        self._cells: LRUCache[tuple, tuple[Segment, ...]] = LRUCache(1024)
        #: The widget's rich styles (its own, the header's, the cursor's), asked once until the styles
        #: change (notify_style_update): each ask walks the widget's ancestors, ~25% of a row's drawing.
        self._rich_styles: dict[str, Style] = {}

    # -- data -------------------------------------------------------------------------------------
    @property
    def columns(self) -> tuple[Column, ...]:
        return self._columns

    @property
    def row_count(self) -> int:
        return len(self._keys)

    @property
    def row_keys(self) -> list[str]:
        return list(self._keys)

    def row(self, key: str) -> dict[str, str]:
        """The cells of row ``key`` as plain text, by column name (what tests and the text view read)."""
        return {c.name: str(cell) for c, cell in zip(self._columns, self._rows[key], strict=True)}

    def shown_columns(self) -> list[str]:
        return [self._columns[i].name for i in self._shown()]

    @property
    def cursor_key(self) -> str | None:
        return self._keys[self.cursor_row] if self._keys else None

    def set_columns(self, columns: Sequence[Column]) -> None:
        if tuple(columns) == self._columns:
            return
        self._columns = tuple(columns)
        self._keys, self._rows, self._row_keys = [], {}, {}
        self._widths = [max(cell_len(c.name), c.min_width) for c in self._columns]
        self.refresh(layout=True)

    def set_rows(self, rows: Sequence[tuple[str, Sequence[Cell]]]) -> None:
        """Show ``rows`` ((key, cells) in order); repaint only what changed."""
        keys = [key for key, _ in rows]
        same_rows = keys == self._keys
        if not same_rows:  # rows came or went: the columns may narrow again
            self._widths = [max(cell_len(c.name), c.min_width) for c in self._columns]
        widths = self._widths
        changed: list[int] = []
        new_rows: dict[str, tuple[Cell, ...]] = {}
        new_keys: dict[str, Hashable] = {}
        for y, (key, cells) in enumerate(rows):
            cells = tuple(cells)
            new_rows[key] = cells
            row_key = new_keys[key] = tuple(text_key(_cell_text(cell)) for cell in cells)
            if self._row_keys.get(key) != row_key or not same_rows:
                changed.append(y)
            for i, cell in enumerate(cells):
                if not self._columns[i].fill and _cell_width(cell) > widths[i]:
                    widths[i] = _cell_width(cell)
        count_changed = len(keys) != len(self._keys)
        self._keys, self._rows, self._row_keys = keys, new_rows, new_keys
        if self.cursor_row >= len(keys):
            self.cursor_row = max(len(keys) - 1, 0)
        self.virtual_size = Size(self.size.width, len(keys) + 1)
        layout = self._layout_key()
        if count_changed:
            self.refresh(layout=True)
        elif layout != self._layout or not same_rows:
            self.refresh()
        elif changed:
            top = round(self.scroll_offset.y)
            regions = [Region(0, y + 1 - top, self.size.width, 1) for y in changed if y >= top]
            if regions:
                self.refresh(*regions)
        self._layout = layout

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._keys) + 1

    # -- drawing ----------------------------------------------------------------------------------
    def _shown(self) -> tuple[int, ...]:
        return choose_columns(self._columns, self._widths, self.size.width)

    def _layout_key(self) -> tuple:
        return (self.size.width, tuple(self._widths), self._shown())

    def _cell_widths(self, shown: Sequence[int]) -> list[int]:
        room = self.size.width
        fixed = sum(self._widths[i] + 2 for i in shown if not self._columns[i].fill)
        return [
            max(room - fixed - 2, self._columns[i].min_width) if self._columns[i].fill else self._widths[i]
            for i in shown
        ]

    def _line(self, cells: Sequence[Cell], shown: Sequence[int]) -> Text:
        line = Text()
        for i, width in zip(shown, self._cell_widths(shown), strict=True):
            line.append(" ")
            line.append_text(_fitted(cells[i], width))
            line.append(" ")
        return line

    def _row_strip(self, cells: Sequence[Cell], shown: Sequence[int], width: int, base: Style) -> Strip:
        """A row drawn cell by cell: each cell's segments are kept by its value, width and style, so a
        row whose figures change each refresh renders only the cells that changed (a rank row has
        thirteen; a step's figures change four or five)."""
        segments: list[Segment] = []
        length = 0
        for i, cell_width in zip(shown, self._cell_widths(shown), strict=True):
            cell = cells[i]
            key = (cell if isinstance(cell, str) else text_key(cell), cell_width, base)
            found = self._cells.get(key)
            if found is None:
                text = Text(" ").append_text(_fitted(cell, cell_width)).append(" ")
                text.stylize_before(base)
                found = self._cells[key] = tuple(text.render(self.app.console, end=""))
            segments.extend(found)
            length += cell_width + 2
        return Strip(segments, length).crop_extend(0, width, base)

    def _rich_style(self, component: str = "") -> Style:
        style = self._rich_styles.get(component)
        if style is None:
            style = self.get_component_rich_style(component) if component else self.rich_style
            self._rich_styles[component] = style
        return style

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        shown = self._shown()
        layout = (width, tuple(self._widths), shown)
        if y == 0:
            style = self._rich_style("line-table--header")
            key: tuple = ("header", layout, self._columns)
            strip = self._strips.get(key)
            if strip is None:
                header = self._line([c.name for c in self._columns], shown)
                strip = self._strips[key] = text_strip(header, width, style, self.app.console)
            return strip
        index = round(self.scroll_offset.y) + y - 1
        base = self._rich_style()
        if index >= len(self._keys):
            return Strip.blank(width, base)
        row_key = self._keys[index]
        cursor = index == self.cursor_row and self.has_focus
        if cursor:
            base = base + self._rich_style("line-table--cursor")
        key = (self._row_keys[row_key], layout, cursor, base)
        strip = self._strips.get(key)
        if strip is None:
            strip = self._strips[key] = self._row_strip(self._rows[row_key], shown, width, base)
        return strip

    def _refresh_row(self, index: int) -> None:
        y = index + 1 - round(self.scroll_offset.y)
        if 1 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def watch_cursor_row(self, old: int, new: int) -> None:
        self._refresh_row(old)
        self._refresh_row(new)
        top = round(self.scroll_offset.y)
        rows_in_view = max(self.size.height - 1, 1)
        if new < top:
            self.scroll_to(y=new, animate=False)
        elif new >= top + rows_in_view:
            self.scroll_to(y=new - rows_in_view + 1, animate=False)

    def on_focus(self) -> None:
        self._refresh_row(self.cursor_row)

    def on_blur(self) -> None:
        self._refresh_row(self.cursor_row)

    def on_resize(self) -> None:
        self.virtual_size = Size(self.size.width, len(self._keys) + 1)
        self._layout = self._layout_key()
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()
        self._cells.clear()
        self._rich_styles.clear()

    # -- keys -------------------------------------------------------------------------------------
    def action_cursor(self, step: int) -> None:
        if self._keys:
            self.cursor_row = min(max(self.cursor_row + step, 0), len(self._keys) - 1)

    def action_select(self) -> None:
        key = self.cursor_key
        if key is not None:
            self.post_message(self.RowSelected(self, key))

    def on_click(self, event) -> None:
        index = round(self.scroll_offset.y) + event.y - 1
        if 0 <= index < len(self._keys):
            self.cursor_row = index
