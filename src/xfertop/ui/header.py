"""The top line: host, driver, clock, refresh period and whether the display is paused."""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.text import Text

from xfertop.ui.lines import LineView

#: The clock's own timer leaves it alone when a repaint looked at it this recently (seconds).
_CHECKED_RECENTLY_S = 0.95


class HeaderBar(LineView):
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        super().__init__(id="header")
        # Injected so snapshot tests can freeze the time shown.
        self._clock = clock
        self._checked_at = float("-inf")

    def update_lines(self) -> None:
        self._checked_at = time.monotonic()
        super().update_lines()

    def tick(self) -> None:
        """The 1 s clock timer: move the clock unless a repaint just did (every repaint updates it, so
        at refresh periods up to 1 s the clock costs no frame of its own)."""
        if time.monotonic() - self._checked_at >= _CHECKED_RECENTLY_S:
            self.update_lines()

    def lines_key(self, width: int) -> tuple:
        view = self.app.view  # type: ignore[attr-defined]
        gpu = view.gpu
        return (width, int(self._clock()), view.host.hostname if view.host else None,
                None if gpu is None else gpu.driver_version, gpu is None, view.interval_s, view.paused)

    def build_lines(self, width: int) -> list[Text]:
        view = self.app.view  # type: ignore[attr-defined]
        line = Text()
        line.append(" xfertop ", style="bold reverse")
        hostname = view.host.hostname if view.host else "…"
        line.append(f" {hostname}", style="bold")
        if view.gpu is not None and view.gpu.driver_version:
            line.append(f"  driver {view.gpu.driver_version}")
        elif view.gpu is not None:
            line.append("  no NVIDIA driver", style="yellow")
        line.append(f"  {time.strftime('%H:%M:%S', time.localtime(self._clock()))}")
        line.append(f"  every {view.interval_s:g} s")
        if view.paused:
            line.append("  PAUSED (p resumes)", style="bold black on yellow")
        line.append("  ? help", style="dim")
        line.truncate(width)
        return [line]
