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

from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey


def update_row(table: DataTable, key: str, columns: Sequence[str], cells: Sequence[Any],
               width_columns: frozenset[str] = frozenset()) -> None:
    """Make row ``key`` show ``cells`` (one per ``columns``), touching only what changed."""
    current = table.get_row(key)
    changed = [(column, new) for column, old, new in zip(columns, current, cells, strict=True) if old != new]
    if not changed:
        return
    data = getattr(table, "_data", None)
    if data is None or not hasattr(table, "_update_count") or any(c in width_columns for c, _ in changed):
        for column, new in changed:
            table.update_cell(key, column, new, update_width=column in width_columns)
        return
    row = data[RowKey(key)]
    for column, new in changed:
        row[ColumnKey(column)] = new
    table._update_count += 1  # the row and line caches are keyed on it
    table.refresh_row(table.get_row_index(key))
