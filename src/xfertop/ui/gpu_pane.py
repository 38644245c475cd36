"""One GPU: utilisation, memory, temperature/power, PCIe RX/TX against the link.

As tall as the GPU area gives it (ui/gpu_area.py): from ``CHART_ROWS`` rows on, the RX and TX history
as charts (the link's capacity as the top line, a time axis, the current value in the title), and beside
them utilisation and memory history where the terminal is wide; two lines (RX/TX sparklines on the
second) when less; one line when many GPUs share a small terminal. Enter on a pane: the detail view.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType

from xfertop.model.gpu import GpuSnapshot
from xfertop.ui import chart, link_text
from xfertop.ui.format import gb, percent, truncate
from xfertop.ui.history import History
from xfertop.ui.text_lines import Pieces, Row, TextLines
from xfertop.ui.view_state import chart_key

#: Bar and name widths: full on wide terminals, shorter below _NARROW_COLUMNS so a one-line pane keeps
#: its PCIe figures in view at 80 columns.
_BAR_CELLS, _BAR_CELLS_NARROW = 10, 4
_NAME_CELLS, _NAME_CELLS_NARROW = 12, 6
_NARROW_COLUMNS = 100
_ONE_LINE_HEALTH_COLUMNS = 140
#: Utilisation and memory trend sparklines join the first line from this width on.
_TREND_COLUMNS, _TREND_CELLS = 120, 16
#: Below this many chart cells the labels drop "sampled" for a "~" to make room.
_MIN_CHART_CELLS = 6
#: From this many rows a pane draws its history as charts (first line, title, 2 chart rows, time axis).
CHART_ROWS = 5
#: Utilisation and memory charts join RX and TX from this width on.
_FOUR_CHART_COLUMNS = 140
_CHART_GAP = 2


def _util_style(value: float | None) -> str:
    if value is None:
        return "dim"
    return "red" if value < 30 else "yellow" if value < 70 else "green"


def _first_line(
    gpu: GpuSnapshot, width: int, health: bool = True, trends: tuple[str, str] | None = None
) -> Text:
    """Name, utilisation and memory (bars, plus the trend sparklines ``trends`` when given), health."""
    narrow = width < _NARROW_COLUMNS
    bar_cells = _BAR_CELLS_NARROW if narrow else _BAR_CELLS
    name_cells = _NAME_CELLS_NARROW if narrow else _NAME_CELLS
    line = Text()
    line.append(f"{gpu.index} ", style="bold")
    line.append(truncate(gpu.name.replace("NVIDIA ", ""), name_cells).ljust(name_cells), style="bold cyan")
    if gpu.lost_reason:
        line.append(f" GPU lost: {gpu.lost_reason}", style="bold red")
        return line
    util = gpu.util_gpu_percent
    line.append(" util ")
    line.append(chart.bar(None if util is None else util / 100, bar_cells), style=_util_style(util))
    line.append(percent(util, 4))
    if trends:
        line.append(" " + trends[0], style=_util_style(util))
    mem_fraction = None
    if gpu.mem_used_bytes is not None and gpu.mem_total_bytes:
        mem_fraction = gpu.mem_used_bytes / gpu.mem_total_bytes
    line.append("  mem ")
    line.append(chart.bar(mem_fraction, bar_cells), style="magenta")
    line.append(f" {gb(gpu.mem_used_bytes)}/{gb(gpu.mem_total_bytes)}G")
    if trends:
        line.append(" " + trends[1], style="magenta")
    extras = []
    if gpu.temperature_c is not None:
        extras.append(f"{gpu.temperature_c:.0f}°C")
    if gpu.power_w is not None:
        limit = f"/{gpu.power_limit_w:.0f}" if gpu.power_limit_w else ""
        extras.append(f"{gpu.power_w:.0f}{limit}W")
    if health and extras and width - len(line) > 20:
        line.append("  " + " ".join(extras), style="dim")
    return line


def _traffic_line(gpu: GpuSnapshot, history: History, width: int) -> Text:
    """Second line: RX and TX charts, each labelled with the rate against the link's capacity."""
    line = Text("  ")
    scale = link_text.chart_scale_bytes_per_s(gpu.link) or 0.0
    labels = [
        link_text.direction_label("RX", gpu.pcie.rx_bytes_per_s, gpu),
        link_text.direction_label("TX", gpu.pcie.tx_bytes_per_s, gpu),
    ]
    half = (width - 2) // 2
    if max(len(label) for label in labels) > half - 1 - _MIN_CHART_CELLS:
        labels = [link_text.short_label(label) for label in labels]
    chart_cells = max(half - max(len(label) for label in labels) - 2, 0)
    for label, direction, style in zip(labels, ("rx", "tx"), ("green", "blue"), strict=True):
        line.append(history.spark(("gpu", gpu.index, direction), scale, chart_cells), style=style)
        line.append(" " + label.ljust(half - chart_cells - 1))
    return line


def _compact_traffic(gpu: GpuSnapshot) -> str:
    if gpu.pcie.method == "none":
        return "  PCIe n/a"
    link = gpu.link
    capacity = link_text.capacity_bytes_per_s(link.gen_current, link.width_current)
    of = f"/{capacity / 1e9:.0f}" if capacity else ""
    sampled = "~" if gpu.pcie.method == "sampled" else ""
    return (
        f"  RX {sampled}{gb(gpu.pcie.rx_bytes_per_s)}{of} TX {sampled}{gb(gpu.pcie.tx_bytes_per_s)}"
        f" GB/s {link_text.link_words(link.gen_current, link.width_current)}"
    )


def _fit(text: str, width: int) -> str:
    return text[: width - 1] + "…" if len(text) > width else text.ljust(width)


def chart_block(
    title: str,
    history: History,
    series: Hashable,
    scale: float,
    top_label: str,
    width: int,
    rows: int,
    style: str,
    seconds_per_point: float,
) -> list[Pieces]:
    """A titled chart exactly ``width`` cells wide and ``rows`` tall (title, plot rows, time axis)."""
    axis, plot = chart.framed(
        lambda w, h: history.area(series, scale, w, h),
        scale,
        width,
        rows - 2,
        top_label=top_label,
        seconds_per_point=seconds_per_point,
    )
    plot_width = width - len(axis[0])
    lines: list[Pieces] = [((_fit(title, width), "bold"),)]
    last = len(plot) - 1
    for index, (left, right) in enumerate(zip(axis, plot, strict=True)):
        plot_style = "dim" if index == last else style
        lines.append(((left, "dim"), (right.ljust(plot_width)[:plot_width], plot_style)))
    return lines


def side_by_side(blocks: list[list[Pieces]], gap: int, indent: str = "") -> list[Pieces]:
    """Rows of charts of the same height, one after the other on each row."""
    rows = []
    for row in range(len(blocks[0]) if blocks else 0):
        pieces: list[tuple[str, str]] = [(indent, "")] if indent else []
        for index, block in enumerate(blocks):
            if index:
                pieces.append((" " * gap, ""))
            pieces.extend(block[row])
        rows.append(tuple(pieces))
    return rows


def gpu_series(gpu: GpuSnapshot, name: str) -> tuple:
    """The chart series of one GPU figure ("rx", "tx", "util", "mem")."""
    return chart_key(("gpu", gpu.index, name))


def traffic_scale(gpu: GpuSnapshot, history: History, direction: str, points: int) -> tuple[float, str]:
    """The top of a PCIe chart ``points`` wide and its axis label: scaled to what flowed over those
    points (link_text.traffic_scale_bytes_per_s), "?" where the link is not known."""
    if not link_text.chart_scale_bytes_per_s(gpu.link):
        return 0.0, "?"
    recent = history.recent_max(gpu_series(gpu, direction), points)
    scale = link_text.traffic_scale_bytes_per_s(recent, gpu.link)
    return scale, link_text.scale_label(scale)


def chart_rows(gpu: GpuSnapshot, history: History, width: int, rows: int, point_s: float) -> list[Pieces]:
    """``rows`` lines of charts side by side: RX and TX scaled to what flowed (the link's capacity in
    their titles), and utilisation and memory when ``width`` allows; ``point_s``: seconds per point."""
    count = 4 if width >= _FOUR_CHART_COLUMNS else 2
    each = (width - 2 - _CHART_GAP * (count - 1)) // count
    charts = [
        (
            link_text.direction_label("RX", gpu.pcie.rx_bytes_per_s, gpu),
            gpu_series(gpu, "rx"),
            *traffic_scale(gpu, history, "rx", each),
            "green",
        ),
        (
            link_text.direction_label("TX", gpu.pcie.tx_bytes_per_s, gpu),
            gpu_series(gpu, "tx"),
            *traffic_scale(gpu, history, "tx", each),
            "blue",
        ),
    ]
    if count == 4:
        memory = f"mem {gb(gpu.mem_used_bytes)} of {gb(gpu.mem_total_bytes)} GB"
        charts += [
            (f"util {percent(gpu.util_gpu_percent)}", gpu_series(gpu, "util"), 100.0, "100%", "cyan"),
            (memory, gpu_series(gpu, "mem"), 100.0, "100%", "magenta"),
        ]
    blocks = [
        chart_block(title, history, series, chart_scale, top_label, each, rows, style, point_s)
        for title, series, chart_scale, top_label, style in charts
    ]
    return side_by_side(blocks, _CHART_GAP, indent="  ")


class GpuPane(TextLines, can_focus=True):
    """Renders GPU ``index`` from the app's ViewState; the app calls ``update_lines`` on each new snapshot."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "detail", "Detail")]

    def __init__(self, index: int) -> None:
        super().__init__(id=f"gpu-{index}", classes="gpu-pane")
        self.index = index

    def snapshot(self) -> GpuSnapshot | None:
        state = self.app.view.gpu  # type: ignore[attr-defined]
        if state is None:
            return None
        return next((gpu for gpu in state.gpus if gpu.index == self.index), None)

    def build_lines(self, width: int) -> list[Row]:
        gpu = self.snapshot()
        if gpu is None:
            return [Text(f"{self.index} gone from the last snapshot", style="dim")]
        one_line = self.has_class("one-line")
        # One line keeps PCIe over temperature and power unless the terminal is wide.
        history = self.app.view.history  # type: ignore[attr-defined]
        trends = None
        if width >= _TREND_COLUMNS:
            trends = (
                history.spark(("gpu", gpu.index, "util"), 100.0, _TREND_CELLS),
                history.spark(("gpu", gpu.index, "mem"), 100.0, _TREND_CELLS),
            )
        warning = None if gpu.lost_reason else link_text.short_warning(gpu)
        # A link warning outranks temperature, power and trends when the line is short.
        roomy = width >= _ONE_LINE_HEALTH_COLUMNS
        first = _first_line(
            gpu,
            width,
            health=roomy or not (one_line or warning),
            trends=trends if roomy or not warning else None,
        )
        if one_line:
            if not gpu.lost_reason:
                first.append(_compact_traffic(gpu))
                if warning:
                    first.append(" ⚠ slow link", style="bold yellow")  # the full words need two lines
            first.truncate(width)
            return [first]
        if gpu.lost_reason:
            return [first]
        rows = self.content_size.height
        if rows >= CHART_ROWS:
            if width >= _FOUR_CHART_COLUMNS:  # the util and mem charts take the trend sparklines' place
                first = _first_line(gpu, width, health=True)
            if warning:
                first.append(f"  ⚠ {warning}", style="bold yellow")
            first.truncate(width)
            point_s = self.app.view.chart_point_s  # type: ignore[attr-defined]
            return [first, *chart_rows(gpu, history, width, rows - 1, point_s)]
        second = _traffic_line(gpu, history, width)
        if warning:
            first.append(f"  ⚠ {warning}", style="bold yellow")
        first.truncate(width)
        second.truncate(width)
        return [first, second]

    def action_detail(self) -> None:
        from xfertop.ui.gpu_detail import GpuDetailScreen

        self.app.push_screen(GpuDetailScreen(self.index))
