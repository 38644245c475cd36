"""The top line: host, driver, clock, refresh period and whether the display is paused; below it, while
there is one, the demo's phase and a line for each source whose samples fail (its panes go stale)."""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.text import Text

from xfertop.sources.bundle import HOST_MIN_INTERVAL_S
from xfertop.ui.text_lines import Row, TextLines


class HeaderBar(TextLines):
    """Repainted by the app's repaint and its tick (ui/app.py); only a changed second moves the clock.
    ``note`` (`xfertop demo`: which phase the demo is in) adds a second line while it says something."""

    AUTO_HEIGHT = True

    def __init__(
        self, clock: Callable[[], float] = time.time, note: Callable[[], str | None] | None = None
    ) -> None:
        super().__init__(id="header")
        # Injected so snapshot tests can freeze the time shown.
        self._clock = clock
        self._note = note

    def build_lines(self, width: int) -> list[Row]:
        view = self.app.view  # type: ignore[attr-defined]
        # (text, style) pieces: the line that changes every second is drawn without a Text (text_lines.py).
        hostname = view.host.hostname if view.host else "…"
        line = [(" xfertop ", "bold reverse"), (f" {hostname}", "bold")]
        if view.gpu is not None and view.gpu.driver_version:
            line.append((f"  driver {view.gpu.driver_version}", ""))
        elif view.gpu is not None and not view.gpu.error:  # else the GPU area's line says why, once
            line.append(("  no NVIDIA driver", "yellow"))
        line.append((f"  {time.strftime('%H:%M:%S', time.localtime(self._clock()))}", ""))
        line.append((f"  every {view.interval_s:g} s", ""))
        if view.interval_s < HOST_MIN_INTERVAL_S:  # the host and jobs panes keep their own pace
            line.append((f" (host, jobs {HOST_MIN_INTERVAL_S:g} s)", "dim"))  # = JOBS_INTERVAL_S
        if view.paused:
            line.append(("  PAUSED (p resumes)", "bold black on yellow"))
        if getattr(self.app, "monochrome", False):
            line.append(("  monochrome", "dim"))
        line.append(("  ? help", "dim"))
        extras = []
        note = self._note() if self._note is not None else None
        if note:
            extras.append(Text(f" {note}", style="bold"))
        sources = getattr(self.app, "sources", None)
        for failure in sources.failures() if sources is not None else ():
            extras.append(Text(f" {failure}", style="bold yellow"))
        for extra in extras:
            extra.truncate(width, overflow="ellipsis")
        return [tuple(line), *extras]  # the first cut to the width where it is drawn
