"""The top line: host, driver, clock, refresh period and whether the display is paused."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from rich.text import Text

from xfertop.ui.deadline import Deadline
from xfertop.ui.lines import LineView
from xfertop.ui.sources_bundle import HOST_MIN_INTERVAL_S

#: The clock's own update lands this long after the second it shows began (s).
_PAST_THE_SECOND_S = 0.01


class HeaderBar(LineView):
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        super().__init__(id="header")
        # Injected so snapshot tests can freeze the time shown.
        self._clock = clock
        self._tick: Deadline | None = None

    def on_mount(self) -> None:
        self._tick = Deadline(self.app, self.tick)
        self._arm_clock(repainted=False)

    def on_unmount(self) -> None:
        if self._tick is not None:
            self._tick.cancel()

    def update_lines(self) -> None:
        """The app's repaint: moves the clock too (repainted only when its second changed)."""
        super().update_lines()
        self._arm_clock(repainted=True)

    def tick(self) -> None:
        """The clock's own update, when no repaint moved it in time."""
        super().update_lines()
        self._arm_clock(repainted=False)

    def _arm_clock(self, repainted: bool) -> None:
        """Be back when the next second begins; after a repaint at periods up to 1 s, one second later:
        the next repaint comes first and moves it again, so the clock costs no event-loop wakeup of its
        own (a Timer would wake every second to find it had nothing to do)."""
        if self._tick is None:
            return
        view = self.app.view  # type: ignore[attr-defined]
        now = self._clock()
        seconds = 2 if repainted and view.interval_s <= 1 and not view.paused else 1
        self._tick.set(math.floor(now) + seconds - now + _PAST_THE_SECOND_S)

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
        if view.interval_s < HOST_MIN_INTERVAL_S:  # the host and jobs panes keep their own pace
            line.append(f" (host, jobs {HOST_MIN_INTERVAL_S:g} s)", style="dim")  # = JOBS_INTERVAL_S
        if view.paused:
            line.append("  PAUSED (p resumes)", style="bold black on yellow")
        line.append("  ? help", style="dim")
        line.truncate(width)
        return [line]
