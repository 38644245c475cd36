"""A table's rows follow its styles as they change: the theme (every colour), and focus (the cursor row
is highlighted only while the table has it). The table keeps its styles between rows (each ask walks
the widget's ancestors), so a change must reach the rows it draws next."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Static

from xfertop.ui.line_table import Column, LineTable


class _TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("above")
        yield LineTable([Column("name"), Column("value")], id="table")

    def on_mount(self) -> None:
        self.query_one(LineTable).set_rows([("a", ("alpha", "1")), ("b", ("beta", "2"))])


def _backgrounds(table: LineTable, y: int) -> set:
    return {segment.style.bgcolor for segment in table.render_line(y) if segment.style is not None}


async def test_rows_follow_the_theme_and_the_focus() -> None:
    app = _TableApp()
    async with app.run_test(size=(40, 8)) as pilot:
        app.theme = "textual-dark"
        app.set_focus(None)  # the table takes the focus at mount
        await pilot.pause()
        table = app.query_one(LineTable)
        # Unfocused: the cursor row is drawn as any other.
        dark = table.rich_style.bgcolor
        assert _backgrounds(table, 1) == {dark} == _backgrounds(table, 2)
        table.focus()
        await pilot.pause()
        cursor = table.get_component_rich_style("line-table--cursor").bgcolor
        assert cursor is not None and cursor != dark
        assert _backgrounds(table, 1) == {cursor}, "the cursor row is highlighted once focused"
        app.theme = "textual-light"
        await pilot.pause()
        light = table.rich_style.bgcolor
        assert light != dark
        assert _backgrounds(table, 2) == {light}, "a row drawn after the theme changed takes its colours"
        table.blur()
        await pilot.pause()
        assert _backgrounds(table, 1) == {light}, "the highlight goes with the focus"
