"""DataTables whose rows change a few cells at a time: updated in place, re-rendered cell by cell.

``DataTable.update_cell`` repaints the whole table (``refresh()``): with a table filling half the screen,
one changed CPU% figure rewrote every line of it to the terminal each period. ``update_row`` writes the
changed cells into the table's data, invalidates its render caches once (``_update_count``, the key they
are stored under) and refreshes only that row.

That still re-rendered every cell of the row through Rich (a ``Padding`` and a console render per cell,
~0.1 ms each, and ~20 us of bookkeeping per cached cell): a rank row of 14 cells cost ~1 ms a period on a
loaded core for the two or three figures that moved. ``CellCachedTable`` keeps each cell's rendered
segments keyed by what decides them (its value, width, row and column index, row style, cursor and hover,
pseudo-classes): a row re-rendered after one cell changed re-renders that cell only, through
DataTable's own ``_render_cell``, and reuses the others' segments.

Private to Textual (pinned at 8.2.8 in pyproject.toml; the tests compare the painted rows with DataTable's
own): where the internals are missing, or a column must grow, ``update_row`` falls back to
``update_cell``; tables with fixed rows or columns, row labels or rows taller than one line render as
DataTable does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.coordinate import Coordinate
from textual.widgets import DataTable
from textual.widgets._data_table import _EMPTY_TEXT, default_cell_formatter
from textual.widgets.data_table import ColumnKey, RowKey

from xfertop.ui.frame import FramePainted
from xfertop.ui.quiet import QuietRender

_NEWLINE = Text("\n")


def update_row(
    table: DataTable,
    key: str,
    columns: Sequence[str],
    cells: Sequence[Any],
    width_columns: frozenset[str] = frozenset(),
) -> None:
    """Make row ``key`` show ``cells`` (one per ``columns``), touching only what changed."""
    current = table.get_row(key)
    changed = [(column, new) for column, old, new in zip(columns, current, cells, strict=True) if old != new]
    if not changed:
        return
    # A value wider than its column widens it (and repaints the table); otherwise it would be cut
    # ("15.6M" shown as "15." under a column sized for the first value, "n/a").
    grow = {
        column
        for column, new in changed
        if column in width_columns or _cell_width(new) > _content_width(table, column)
    }
    data = getattr(table, "_data", None)
    if data is None or not hasattr(table, "_update_count") or grow:
        for column, new in changed:
            table.update_cell(key, column, new, update_width=column in grow)
        return
    row = data[RowKey(key)]
    for column, new in changed:
        row[ColumnKey(column)] = new
    table._update_count += 1  # the row and line caches are keyed on it
    table.refresh_row(table.get_row_index(key))


def _cell_width(value: Any) -> int:
    width = getattr(value, "cell_len", None)  # rich Text
    return width if isinstance(width, int) else cell_len(str(value))


def _content_width(table: DataTable, column: str) -> int:
    found = table.columns.get(ColumnKey(column))
    return found.content_width if found is not None else 0


def _content_key(value: Any) -> Any:
    """What a cell shows, hashable and compared by value (a Text by its text, spans and settings)."""
    if value is None or isinstance(value, str | int | float):
        return (type(value), value)
    if isinstance(value, Text):
        return (
            Text,
            value.plain,
            tuple(value.spans),
            value.style,
            value.justify,
            value.overflow,
            value.no_wrap,
            value.end,
        )
    return None  # anything else: not cached here


class CellCachedTable(FramePainted, QuietRender, DataTable):
    """A DataTable whose row renders reuse each unchanged cell's segments (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: (row key, column key) -> (what decided the render, its segments): one entry per cell.
        self._cell_segments: dict[tuple[RowKey, ColumnKey], tuple[tuple, list[Segment]]] = {}

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cell_segments.clear()  # component styles (cursor, header) or the theme changed

    def idle_work_pending(self) -> bool:
        # DataTable._on_idle measures updated cells and new rows (update_cell(update_width=True), add_row).
        return bool(self._updated_cells or self._require_update_dimensions or self._new_rows)

    def _simple_rows(self) -> bool:
        labels = self._labelled_row_exists and self.show_row_labels
        return not (self.fixed_rows or self.fixed_columns or labels)

    def _render_line_in_row(
        self,
        row_key: RowKey,
        line_no: int,
        base_style: Style,
        cursor_location: Coordinate,
        hover_location: Coordinate,
    ) -> tuple[list, list]:
        """DataTable's own, for the layout xfertop uses (no fixed rows/columns or labels, one-line rows),
        with each cell's segments from the cache while what decides them is unchanged."""
        row = self.rows.get(row_key)
        height = self.header_height if row is None else row.height
        if line_no != 0 or height != 1 or not self._simple_rows():
            return super()._render_line_in_row(row_key, line_no, base_style, cursor_location, hover_location)
        cursor_type = self.cursor_type
        show_cursor = self.show_cursor
        show_hover = self._show_hover_cursor
        pseudo = self._pseudo_class_state
        cache_key = (
            row_key,
            line_no,
            base_style,
            cursor_location,
            hover_location,
            cursor_type,
            show_cursor,
            show_hover,
            self._update_count,
            pseudo,
        )
        if cache_key in self._row_render_cache:
            return self._row_render_cache[cache_key]

        located = self._row_locations.get(row_key)
        row_index = -1 if located is None else located
        row_style = self._get_row_style(row_index, base_style)
        values = None if row_index == -1 else self._data.get(row_key, {})
        should_highlight = self._should_highlight
        padding = self.cell_padding
        settings = (
            row_style,
            show_cursor,
            show_hover,
            pseudo,
            self.cursor_foreground_priority,
            self.cursor_background_priority,
            padding,
        )
        memo = self._cell_segments
        if len(memo) > 4 * max(len(self.columns) * (self.row_count + 1), 64):
            memo.clear()  # rows came and went: drop the gone rows' cells
        # A row cursor (or none) highlights every cell of the row alike: decide it once.
        whole_row = cursor_type in ("row", "none")
        if whole_row:
            row_cursor = should_highlight(cursor_location, Coordinate(row_index, 0), cursor_type)
            row_hover = should_highlight(hover_location, Coordinate(row_index, 0), cursor_type)
        scrollable_row = []
        table_width = 0
        for column_index, column in enumerate(self.ordered_columns):
            if whole_row:
                cursor, hover = row_cursor, row_hover
            else:
                location = Coordinate(row_index, column_index)
                cursor = should_highlight(cursor_location, location, cursor_type)
                hover = should_highlight(hover_location, location, cursor_type)
            # Column.get_render_width, without its reactive read per cell.
            width = 2 * padding + (column.content_width if column.auto_width else column.width)
            table_width += width
            value = column.label if values is None else values.get(column.key)
            content = _content_key(value)
            decided_by = (content, row_index, column_index, width, cursor, hover, settings)
            slot = (row_key, column.key)
            found = memo.get(slot)
            if content is not None and found is not None and found[0] == decided_by:
                scrollable_row.append(found[1])
                continue
            segments = self._cell_line(row_index, column_index, row_style, width, cursor, hover, value)
            if content is not None:
                memo[slot] = (decided_by, segments)
            scrollable_row.append(segments)
        scrollable_row.append(
            [_extend_segment(self, row_index, row_style, table_width, cursor_location, hover_location)]
        )
        row_pair: tuple[list, list] = ([], scrollable_row)
        self._row_render_cache[cache_key] = row_pair
        return row_pair

    def _cell_line(
        self,
        row_index: int,
        column_index: int,
        row_style: Style,
        width: int,
        cursor: bool,
        hover: bool,
        value: Any,
    ) -> list[Segment]:
        """One cell's segments: what DataTable._render_cell gives (Rich renders the cell inside a Padding,
        styled before and after), built directly for a one-line Text that fits; anything else goes
        through DataTable._render_cell."""
        padding = self.cell_padding
        if row_index == -1:
            cell = value
        else:
            cell = _EMPTY_TEXT if value is None else default_cell_formatter(value, wrap=False, height=1)
            cell = cell or _EMPTY_TEXT
        inner = width - 2 * padding
        if (
            not isinstance(cell, Text)
            or inner < 0
            or "\n" in cell.plain
            or "\t" in cell.plain
            or cell.cell_len > inner
        ):
            return self._render_cell(row_index, column_index, row_style, width, cursor=cursor, hover=hover)[0]
        component_style, post_style = self._get_styles_to_render_cell(
            row_index == -1,
            False,
            False,
            hover,
            cursor,
            self.show_cursor,
            self._show_hover_cursor,
            self.cursor_foreground_priority == "css",
            self.cursor_background_priority == "css",
        )
        pre_style = row_style + Style.from_meta({"row": row_index, "column": column_index}) + component_style

        def styled(style: Style | None) -> Style:  # textual.renderables.Styled via Segment.apply_style
            style = pre_style + style
            return style + post_style if post_style else style

        blank = styled(None)
        segments = [Segment(" " * padding, blank)] if padding else []
        # Text.__rich_console__ joins its lines, which turns the Text's own style into a span.
        line = _NEWLINE.join([cell])
        segments += [
            Segment(text, styled(style)) for text, style, _ in line.render(self.app.console, end="") if text
        ]
        if cell.cell_len < inner:
            segments.append(Segment(" " * (inner - cell.cell_len), blank))
        if padding:
            segments.append(Segment(" " * padding, blank))
        return segments


def _extend_segment(
    table: DataTable,
    row_index: int,
    row_style: Style,
    table_width: int,
    cursor_location: Coordinate,
    hover_location: Coordinate,
) -> Segment:
    """The filler right of the last column, styled as DataTable._render_line_in_row styles it."""
    remaining_space = max(0, table.size.width - table_width - table._row_label_column_width)
    if table.cursor_type == "row":
        extend_style, _ = table._get_styles_to_render_cell(
            row_index == -1,
            False,
            False,
            table._should_highlight(hover_location, Coordinate(row_index or 0, 0), table.cursor_type),
            row_index == cursor_location.row,
            table.show_cursor,
            table._show_hover_cursor,
            False,
            False,
        )
        extend_style = row_style + extend_style
    elif row_style.bgcolor is not None:
        from textual.color import Color

        faded_color = Color.from_rich_color(row_style.bgcolor).blend(table.background_colors[1], factor=0.25)
        extend_style = Style.from_color(color=row_style.color, bgcolor=faded_color.rich_color)
    else:
        extend_style = Style.from_color(row_style.color, row_style.bgcolor)
    extend_style += Style.from_meta({"row": row_index, "column": 0, "out_of_bounds": True})
    return Segment(" " * remaining_space, extend_style)
