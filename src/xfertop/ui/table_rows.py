"""Updating a DataTable row in place: only the cells that changed, and only that row repainted.

``DataTable.update_cell`` repaints the whole table (``refresh()``): with a table filling half the screen,
one changed CPU% figure rewrote every line of it to the terminal each period. Here the changed cells are
written into the table's data, the render caches are invalidated once (``_update_count``, the key they
are stored under) and only the row is refreshed. Private to Textual (checked against 3.x/6.x): where the
internals are missing, or a column must grow, this falls back to ``update_cell``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.cells import cell_len
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey


def update_row(table: DataTable, key: str, columns: Sequence[str], cells: Sequence[Any],
               width_columns: frozenset[str] = frozenset()) -> None:
    """Make row ``key`` show ``cells`` (one per ``columns``), touching only what changed."""
    current = table.get_row(key)
    changed = [(column, new) for column, old, new in zip(columns, current, cells, strict=True) if old != new]
    if not changed:
        return
    # A value wider than its column widens it (and repaints the table); otherwise it would be cut
    # ("15.6M" shown as "15." under a column sized for the first value, "n/a").
    grow = {column for column, new in changed
            if column in width_columns or _cell_width(new) > _content_width(table, column)}
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
