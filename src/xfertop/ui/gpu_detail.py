"""One GPU in full: PCIe RX/TX history scaled to the link, utilisation and memory, link and health."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen

from xfertop.model.gpu import GpuSnapshot
from xfertop.ui import link_text
from xfertop.ui.format import NA, gb, percent
from xfertop.ui.gpu_pane import chart_block, gpu_series, side_by_side, traffic_scale
from xfertop.ui.history import History
from xfertop.ui.key_footer import KeyFooter
from xfertop.ui.text_lines import Pieces, Row, TextLines

#: Side by side in pairs (RX | TX over util | mem) from this width on; stacked below it.
_PAIRED_COLUMNS = 120
_GAP = 2


def _value(value: object, unit: str = "") -> str:
    return NA if value is None else f"{value}{unit}"


def _facts(gpu: GpuSnapshot) -> Text:
    link, errors = gpu.link, gpu.errors
    coverage = gpu.pcie.coverage
    method = {
        "counter": "byte counters, covers all the time",
        "gpm": "GPM counters, covers all the time",
        "sampled": f"20 ms sampler, covers {100 * (coverage or 0):.0f}% of the time",
        "none": "not available on this GPU or driver",
    }[gpu.pcie.method]
    lines = [
        f"{gpu.name}  {gpu.uuid}  bus {gpu.bus_id}",
        f"link now {link_text.link_words(link.gen_current, link.width_current)}, "
        f"slot max {link_text.link_words(link.gen_max, link.width_max)}, "
        f"GPU max Gen{_value(link.gen_gpu_max)}"
        f"   PCIe figures: {method}",
        f"replays +{_value(errors.replay_delta)}  correctable errors +{_value(errors.correctable_delta)}"
        f"   clocks SM {_value(gpu.sm_clock_mhz, ' MHz')} mem {_value(gpu.mem_clock_mhz, ' MHz')}"
        f"   power {_value(gpu.power_w, ' W')} of {_value(gpu.power_limit_w, ' W')}"
        f"   {_value(gpu.temperature_c, '°C')}",
        "throttle: " + (", ".join(gpu.throttle_reasons) or "none"),
    ]
    text = Text("\n".join(lines))
    warning = link_text.link_warning(gpu)
    if warning:
        text.append(f"\n⚠ {warning}", style="bold yellow")
    return text


def detail_charts(gpu: GpuSnapshot, history: History, width: int, rows: int, point_s: float) -> list[Pieces]:
    """RX, TX, utilisation and memory history filling ``rows`` lines: in two pairs side by side when
    ``width`` allows, else one under the other."""
    per_row = 2 if width >= _PAIRED_COLUMNS else 1
    each_width = (width - _GAP * (per_row - 1)) // per_row
    charts = [
        (
            link_text.direction_label("RX", gpu.pcie.rx_bytes_per_s, gpu) + "  host to device",
            gpu_series(gpu, "rx"),
            *traffic_scale(gpu, history, "rx", each_width),
            "green",
        ),
        (
            link_text.direction_label("TX", gpu.pcie.tx_bytes_per_s, gpu) + "  device to host",
            gpu_series(gpu, "tx"),
            *traffic_scale(gpu, history, "tx", each_width),
            "blue",
        ),
        (f"utilisation {percent(gpu.util_gpu_percent)}", gpu_series(gpu, "util"), 100.0, "100%", "cyan"),
        (
            f"memory {gb(gpu.mem_used_bytes)} of {gb(gpu.mem_total_bytes)} GB",
            gpu_series(gpu, "mem"),
            100.0,
            "100%",
            "magenta",
        ),
    ]
    bands = len(charts) // per_row
    lines: list[Pieces] = []
    for band in range(bands):
        band_rows = max((rows - len(lines)) // (bands - band), 3)
        shown = charts[band * per_row : (band + 1) * per_row]
        lines += side_by_side(
            [
                chart_block(
                    title, history, series, chart_scale, top_label, each_width, band_rows, style, point_s
                )
                for title, series, chart_scale, top_label, style in shown
            ],
            _GAP,
        )
    return lines


class GpuDetail(TextLines):
    def __init__(self, index: int) -> None:
        super().__init__(id="gpu-detail", classes="live")
        self.index = index

    def build_lines(self, width: int) -> list[Row]:
        view = self.app.view  # type: ignore[attr-defined]
        gpu = next((g for g in view.gpu.gpus if g.index == self.index), None) if view.gpu else None
        if gpu is None:
            return [Text(f"GPU {self.index} is not in the latest snapshot.", style="yellow")]
        if gpu.lost_reason:
            return [Text(f"GPU {self.index} lost: {gpu.lost_reason}", style="bold red")]
        height = max(self.content_size.height, 16)
        facts = _facts(gpu).split()
        for line in facts:
            line.truncate(width, overflow="ellipsis")
        return [*facts, *detail_charts(gpu, view.history, width, height - len(facts), view.chart_point_s)]


class GpuDetailScreen(Screen):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("enter", "app.pop_screen", "Back", show=False),
    ]

    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index

    def compose(self) -> ComposeResult:
        yield GpuDetail(self.index)
        yield KeyFooter()
