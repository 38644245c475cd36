"""Host CPU (total and per core), load, memory and swap."""

from __future__ import annotations

from rich.text import Text

from xfertop.model.host import HostState
from xfertop.ui import chart
from xfertop.ui.format import human_bytes
from xfertop.ui.text_lines import Pieces, Row, TextLines

_BAR_CELLS = 12


def _core_cells(per_core_percent: tuple[float, ...]) -> str:
    """One block character per core, height = utilisation (64 cores fit in 64 cells)."""
    return chart.spark(per_core_percent, 100.0, len(per_core_percent))


def _fraction(used: int, total: int) -> float | None:
    return used / total if total else None


def host_lines(host: HostState) -> list[Pieces]:
    """The pane's rows as (text, style) pieces (they change every refresh: text_lines.py), cut to the
    pane's width where they are drawn."""
    load = " ".join(f"{v:.2f}" for v in host.load_avg)
    cpu = (
        ("CPU  ", ""),
        (chart.bar(host.cpu_percent / 100, _BAR_CELLS), "cyan"),
        (f" {host.cpu_percent:3.0f}%  load {load}", ""),
    )
    cores = (
        ("cores ", ""),
        (_core_cells(host.cpu_per_core_percent), "cyan"),
        (f" ({len(host.cpu_per_core_percent)})", "dim"),
    )
    mem_bar = chart.bar(_fraction(host.mem_used_bytes, host.mem_total_bytes), _BAR_CELLS)
    mem = (
        ("MEM  ", ""),
        (mem_bar, "magenta"),
        (f" {human_bytes(host.mem_used_bytes)}/{human_bytes(host.mem_total_bytes)}", ""),
        (f"  swap {human_bytes(host.swap_used_bytes)}/{human_bytes(host.swap_total_bytes)}", ""),
    )
    lines = [cpu, cores, mem]
    if host.error:
        lines.append(((host.error, "yellow"),))
    return lines


class HostPane(TextLines):
    def __init__(self) -> None:
        super().__init__(id="host")
        self.border_title = "host"

    def build_lines(self, width: int) -> list[Row]:
        host = self.app.view.host  # type: ignore[attr-defined]
        if host is None:
            return [Text("waiting for the first host sample…", style="dim")]
        return list(host_lines(host))
