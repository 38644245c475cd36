"""The least a Textual app pays to change a screen once per period: the floor under xfertop's view.

A bare Textual app (no data sources, no analysis) that changes some rows of its screen every period, as a
monitor does, on Textual's cheapest public path (the Line API: ``render_line`` rows kept as strips, and
``refresh(Region)`` of the rows that changed). Run in a pseudo-terminal by ``benchmarks/tui_cpu.py
--floor`` beside xfertop and nvitop, it says how much of xfertop's CPU any Textual app of its shape pays:

- ``clock``: one widget, one row, the time each period (the smallest app that changes every period).
- ``panes``: xfertop's shape at 160x48: 12 widgets (a header row, a GPU pane of 10 rows, a jobs table,
  verdict lines, a step strip, a host pane, a process table, a key line and the containers around them),
  changing the rows xfertop changes each period at 1 Hz (docs/ui.md: the header's clock, the GPU pane's
  chart rows, the strip's newest row, one row of each table and the host pane's rates).

Textual runs as xfertop runs it: with xfertop's input driver (ui/textual_compat.py), whose input thread
sleeps until a key comes; ``--textual-driver`` keeps Textual's own, which wakes ten times a second.

    python benchmarks/textual_floor.py panes --interval 1
"""

from __future__ import annotations

import argparse
import sys
import time

from rich.segment import Segment
from rich.style import Style
from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.driver import Driver
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget


class Rows(Widget):
    """Rows of text, each drawn as a strip once and kept until its text changes."""

    def __init__(self, rows: int, changing: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self._texts = [f"{self.id} row {y}" for y in range(rows)]
        self._strips: dict[int, Strip] = {}
        self._changing = changing
        self._style = Style(color="grey70")

    def change(self, now: str) -> None:
        width = self.size.width
        for y in range(min(self._changing, len(self._texts))):
            self._texts[y] = f"{self.id} row {y} {now}"
            self._strips.pop(y, None)
            self.refresh(Region(0, y, width, 1))

    def render_line(self, y: int) -> Strip:
        strip = self._strips.get(y)
        if strip is None:
            text = self._texts[y] if y < len(self._texts) else ""
            width = self.size.width
            strip = Strip([Segment(text[:width].ljust(width), self._style)], width)
            self._strips[y] = strip
        return strip


#: Each pane of ``panes`` by id: (rows, rows changed each period, CSS height).
PANES = {
    "header": (1, 1, "1"),
    "gpu": (10, 9, "10"),
    "ranks": (3, 1, "3"),
    "verdicts": (3, 0, "3"),
    "strip": (20, 1, "1fr"),
    "host": (3, 2, "5"),
    "processes": (4, 2, "4"),
    "keys": (1, 0, "1"),
}


def pane(name: str) -> Rows:
    rows, changing, _ = PANES[name]
    return Rows(rows, changing, id=name)


class Floor(App[None]):
    def __init__(self, shape: str, interval_s: float, quiet_driver: bool = True) -> None:
        self._shape, self._interval_s, self._quiet_driver = shape, interval_s, quiet_driver
        super().__init__()  # which asks for the driver class

    def get_driver_class(self) -> type[Driver]:
        if not self._quiet_driver:
            return super().get_driver_class()
        from xfertop.ui.textual_compat import driver_class_for

        return driver_class_for(super().get_driver_class())

    def compose(self) -> ComposeResult:
        if self._shape == "clock":
            yield Rows(1, 1, id="clock")
            return
        yield pane("header")
        yield pane("gpu")
        with Horizontal(id="middle"):
            with Vertical(id="jobs"):
                yield pane("ranks")
                yield pane("verdicts")
                yield pane("strip")
            yield pane("host")
        yield pane("processes")
        yield pane("keys")

    CSS = (
        "\n".join(f"#{name} {{ height: {height}; }}" for name, (_, _, height) in PANES.items())
        + """
    #middle { height: 1fr; }
    #jobs { width: 3fr; }
    #host { width: 1fr; }
    #clock { height: 1; }
    """
    )

    def on_mount(self) -> None:
        self.set_interval(self._interval_s, self._tick)

    def _tick(self) -> None:
        now = time.strftime("%H:%M:%S") + f" {time.monotonic():.3f}"
        for widget in self.query(Rows):
            widget.change(now)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shape", choices=("clock", "panes"))
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--textual-driver", action="store_true", help="Textual's own input driver")
    args = parser.parse_args()
    Floor(args.shape, args.interval, quiet_driver=not args.textual_driver).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
