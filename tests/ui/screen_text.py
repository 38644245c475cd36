"""The screen as plain text, read from Textual's own SVG screenshot (``App.export_screenshot``): what a
person copying the terminal's text, or reading it without colour, would get."""

from __future__ import annotations

import html
import re

from textual.app import App

#: Rich's SVG export: 20 px font, cells 0.61 of it wide.
_CHAR_WIDTH_PX = 20 * 0.61
_TEXT = re.compile(
    r'<text class="[^"]*" x="([\d.]+)" y="[\d.]+" textLength="[\d.]+" '
    r'clip-path="url\(#[\w-]*line-(\d+)\)">([^<]*)</text>'
)


def svg_text(svg: str, width: int, height: int) -> list[str]:
    rows = [[" "] * width for _ in range(height)]
    for x, line, text in _TEXT.findall(svg):
        column = round(float(x) / _CHAR_WIDTH_PX)
        for offset, char in enumerate(html.unescape(text).replace("\xa0", " ")):
            if 0 <= column + offset < width and int(line) < height:
                rows[int(line)][column + offset] = char
    return ["".join(row).rstrip() for row in rows]


def screen_text(app: App) -> list[str]:
    """The rows of ``app``'s screen as text, right-trimmed."""
    width, height = app.size
    return svg_text(app.export_screenshot(), width, height)


def blank_rows(rows: list[str]) -> int:
    return sum(1 for row in rows if not row.strip())
