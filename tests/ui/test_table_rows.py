"""Rows updated in place: the changed cells land in the table and only that row is repainted."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.coordinate import Coordinate
from textual.geometry import Region
from textual.widgets import DataTable, Input

from xfertop.ui.table_rows import CellCachedTable, update_row

COLUMNS = ("PID", "CPU%", "COMMAND")


class _TableApp(App[None]):
    def compose(self) -> ComposeResult:
        table: DataTable = DataTable()
        for name in COLUMNS:
            table.add_column(name, key=name)
        table.add_row("1", "5", "python", key="1")
        table.add_row("2", "7", "sh", key="2")
        yield table


async def test_changed_cells_are_written_and_only_their_row_refreshed() -> None:
    app = _TableApp()
    async with app.run_test(size=(60, 20)) as pilot:
        table = app.query_one(DataTable)
        await pilot.pause()
        whole: list[bool] = []
        regions: list[Region] = []
        table.refresh = lambda *regions_, **kw: whole.append(not regions_) or table  # type: ignore[method-assign]
        table._refresh_region = lambda region: regions.append(region)  # type: ignore[method-assign]
        update_row(table, "2", COLUMNS, ("2", "9", "sh"))
        assert table.get_row("2") == ["2", "9", "sh"] and table.get_row("1") == ["1", "5", "python"]
        assert not any(whole), "the whole table was repainted"
        assert len(regions) == 1 and regions[0].height == 1


async def test_unchanged_rows_touch_nothing_and_a_growing_column_uses_update_cell() -> None:
    app = _TableApp()
    async with app.run_test(size=(60, 20)) as pilot:
        table = app.query_one(DataTable)
        await pilot.pause()
        count = table._update_count
        update_row(table, "1", COLUMNS, ("1", "5", "python"))
        assert table._update_count == count
        update_row(table, "1", COLUMNS, ("1", "5", "python train.py --long"), frozenset({"COMMAND"}))
        await pilot.pause()
        assert table.get_row("1")[2] == "python train.py --long"
        assert table.columns["COMMAND"].content_width >= len("python train.py --long")  # type: ignore[index]


async def test_a_value_wider_than_its_column_widens_it_instead_of_being_cut() -> None:
    """The process table's RSS column was sized by its first value "n/a": "15.6M" then showed as "15."."""
    app = _TableApp()
    async with app.run_test(size=(60, 20)) as pilot:
        table = app.query_one(DataTable)
        await pilot.pause()
        update_row(table, "1", COLUMNS, ("1", "100.5", "python"))  # CPU% not declared as growing
        await pilot.pause()
        assert table.columns["CPU%"].content_width >= len("100.5")  # type: ignore[index]


def _painted(table: DataTable) -> list[tuple[str, list]]:
    """Every line of the table as text and styles, rendered through its caches."""
    lines = table.render_lines(table.region.reset_offset)
    return [(strip.text, [segment.style for segment in strip]) for strip in lines]


async def test_a_row_updated_in_place_paints_as_if_freshly_rendered() -> None:
    """Only the changed cells' renders are dropped: what is painted must still match a render from
    scratch, for the updated row (with or without the cursor on it) and for the rows around it."""
    app = _TableApp()
    async with app.run_test(size=(60, 20)) as pilot:
        table = app.query_one(DataTable)
        table.cursor_type = "row"
        await pilot.pause()
        for cursor_row, values in ((1, ("2", "8", "sh")), (0, ("2", "9", "zsh")), (1, ("2", "3", "sh"))):
            table.move_cursor(row=cursor_row)
            _painted(table)  # fill the caches with the old values
            update_row(table, "2", COLUMNS, values)
            in_place = _painted(table)
            table._update_count += 1  # every cache entry unreachable: a render from scratch
            table._styles_cache.clear()
            assert in_place == _painted(table)
            assert values[1] in in_place[2][0] and "python" in in_place[1][0]


_MIXED = ("PID", "STATUS", "BAR", "NOTE")
_ROWS = [
    ("1", Text("live", style="green"), Text.assemble(("███", "red"), ("··", "dim")), "[bold]not markup?[/]"),
    ("22", Text("stalled", style="bold red"), Text("⚠ é wide", style="yellow"), None),
    (3, 4.5, "", Text("")),
]


class _MixedApp(App[None]):
    def compose(self) -> ComposeResult:
        table = CellCachedTable(cursor_type="row")
        for name in _MIXED:
            table.add_column(name, key=name)
        for index, row in enumerate(_ROWS):
            table.add_row(*row, key=str(index))
        yield table
        yield Input()


def _characters(segments: list) -> list:
    return [(char, segment.style) for segment in segments for char in segment.text]


def _assert_rows_as_datatable(table: CellCachedTable) -> None:
    """Each row (and the header) as DataTable itself renders it: characters, colours and click meta."""
    keys = [table._header_row_key, *(table._row_locations.get_key(i) for i in range(table.row_count))]
    for cursor in (Coordinate(0, 0), Coordinate(1, 0), Coordinate(2, 1)):
        for hover in (Coordinate(-1, -1), Coordinate(1, 2)):
            for key in keys:
                table._row_render_cache.clear()
                _, mine = table._render_line_in_row(key, 0, table.rich_style, cursor, hover)
                table._row_render_cache.clear()
                _, theirs = DataTable._render_line_in_row(table, key, 0, table.rich_style, cursor, hover)
                assert [_characters(cell) for cell in mine] == [_characters(cell) for cell in theirs], key


async def test_cell_cached_rows_render_as_datatable_does() -> None:
    app = _MixedApp()
    async with app.run_test(size=(70, 12)) as pilot:
        table = app.query_one(CellCachedTable)
        table.focus()
        await pilot.pause()
        _assert_rows_as_datatable(table)
        update_row(table, "1", _MIXED, ("22", Text("live", style="green"), "x", "note"))
        _assert_rows_as_datatable(table)
        app.query_one(Input).focus()  # the cursor's look without the focus
        await pilot.pause()
        _assert_rows_as_datatable(table)
        update_row(table, "0", _MIXED, ("1", Text("finished", style="dim"), "", "[b]"))
        _assert_rows_as_datatable(table)
        painted = _painted(table)
        table._update_count += 1
        table._styles_cache.clear()
        table._cell_segments.clear()
        assert painted == _painted(table)
