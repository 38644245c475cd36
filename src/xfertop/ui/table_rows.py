"""Updating a DataTable row in place: only the cells that changed are re-rendered, only that row repainted.

``DataTable.update_cell`` repaints the whole table (``refresh()``): with a table filling half the screen,
one changed CPU% figure rewrote every line of it to the terminal each period. Bumping the table's
``_update_count`` (the key all its render caches are stored under) and refreshing only the row fixed
the terminal output, but still re-rendered every cell of the row through Rich (``Padding`` and a
console render per cell, ~0.1 ms each): a rank row of 14 cells cost ~1.5 ms a period for the one or two
figures that moved. Here the changed cells are written into the table's data and only their entries
are dropped from the caches (the cells' renders, the row's renderables, its rendered lines); the other
cells keep their cached renders. Private to Textual (pinned at 8.2.8 in pyproject.toml; checked against
it): where the internals are missing, or a column must grow, this falls back to ``update_cell``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rich.cells import cell_len
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

#: The DataTable internals the in-place path touches; without any of them it falls back.
_INTERNALS = ("_data", "_update_count", "_cell_render_cache", "_row_renderable_cache", "_row_render_cache",
              "_line_cache", "_get_offsets", "_row_locations")


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
    if grow or not all(hasattr(table, name) for name in _INTERNALS):
        for column, new in changed:
            table.update_cell(key, column, new, update_width=column in grow)
        return
    row_key = RowKey(key)
    row = table._data[row_key]
    for column, new in changed:
        row[ColumnKey(column)] = new
    _forget_renders(table, row_key, {ColumnKey(column) for column, _ in changed})
    table.refresh_row(table.get_row_index(key))


def _forget_renders(table: DataTable, row_key: RowKey, columns: set[ColumnKey]) -> None:
    """Drop the cached renders of the changed cells and of the row's lines, nothing else. Entries
    stored under an older ``_update_count`` can never be hit again: they are skipped, not searched."""
    row_index = table._row_locations.get(row_key)
    count = table._update_count
    # Cell renders: (row key, column key, style, cursor, hover, hover shown, update count, ...).
    _discard(table._cell_render_cache, lambda k: k[6] == count and k[0] == row_key and k[1] in columns)
    # The row's cells as renderables: (update count, row index).
    _discard(table._row_renderable_cache, lambda k: k[0] == count and k[1] == row_index)
    # The row's rendered lines, cells joined: (row key, line in row, ..., update count, pseudo-classes).
    _discard(table._row_render_cache, lambda k: k[-2] == count and k[0] == row_key)
    # Whole table lines, cropped and padded: (y, x1, x2, ..., update count, pseudo-classes), y from the top.
    _discard(table._line_cache, lambda k: k[-2] == count and _row_at(table, k[0]) == row_key)


def _discard(cache: Any, doomed: Any) -> None:
    stale: Iterable = [k for k in list(cache.keys()) if doomed(k)]
    for k in stale:
        cache.discard(k)


def _row_at(table: DataTable, y: int) -> RowKey | None:
    try:
        return table._get_offsets(y)[0]
    except LookupError:
        return None


def _cell_width(value: Any) -> int:
    width = getattr(value, "cell_len", None)  # rich Text
    return width if isinstance(width, int) else cell_len(str(value))


def _content_width(table: DataTable, column: str) -> int:
    found = table.columns.get(ColumnKey(column))
    return found.content_width if found is not None else 0
