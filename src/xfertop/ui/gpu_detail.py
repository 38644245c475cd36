"""One GPU in full: PCIe RX/TX history scaled to the link, utilisation and memory, link and health."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer

from xfertop.model.gpu import GpuSnapshot
from xfertop.ui import chart, link_text
from xfertop.ui.format import NA, gb, percent

#: Chart height bounds; the four charts share what the facts above them leave.
_CHART_ROWS_MIN, _CHART_ROWS_MAX = 1, 6
_FACT_ROWS = 7


def _value(value: object, unit: str = "") -> str:
    return NA if value is None else f"{value}{unit}"


def _facts(gpu: GpuSnapshot) -> Text:
    link, errors = gpu.link, gpu.errors
    coverage = gpu.pcie.coverage
    method = {"counter": "byte counters, covers all the time",
              "gpm": "GPM counters, covers all the time",
              "sampled": f"20 ms sampler, covers {100 * (coverage or 0):.0f}% of the time",
              "none": "not available on this GPU or driver"}[gpu.pcie.method]
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


def _chart(title: str, values: list, scale: float, width: int, rows: int, style: str) -> Text:
    text = Text(title + "\n", style="bold")
    text.append("\n".join(chart.area(values, scale, width, rows)), style=style)
    return text


class GpuDetail(Widget):
    def __init__(self, index: int) -> None:
        super().__init__(id="gpu-detail", classes="live")
        self.index = index

    def render(self) -> Text:
        view = self.app.view  # type: ignore[attr-defined]
        gpu = next((g for g in view.gpu.gpus if g.index == self.index), None) if view.gpu else None
        if gpu is None:
            return Text(f"GPU {self.index} is not in the latest snapshot.", style="yellow")
        if gpu.lost_reason:
            return Text(f"GPU {self.index} lost: {gpu.lost_reason}", style="bold red")
        width = max(self.content_size.width, 10)
        history = view.history
        scale = link_text.chart_scale_bytes_per_s(gpu.link) or 0.0
        rows = (self.content_size.height - _FACT_ROWS) // 4 - 1
        rows = min(max(rows, _CHART_ROWS_MIN), _CHART_ROWS_MAX)
        parts = [
            _facts(gpu),
            _chart(link_text.direction_label("RX", gpu.pcie.rx_bytes_per_s, gpu) + "  (host to device)",
                   history.get(("gpu", self.index, "rx")), scale, width, rows, "green"),
            _chart(link_text.direction_label("TX", gpu.pcie.tx_bytes_per_s, gpu) + "  (device to host)",
                   history.get(("gpu", self.index, "tx")), scale, width, rows, "blue"),
            _chart(f"utilisation {percent(gpu.util_gpu_percent)}",
                   history.get(("gpu", self.index, "util")), 100.0, width, rows, "cyan"),
            _chart(f"memory {gb(gpu.mem_used_bytes)} of {gb(gpu.mem_total_bytes)} GB",
                   history.get(("gpu", self.index, "mem")), 100.0, width, rows, "magenta"),
        ]
        return Text("\n").join(parts)


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
        yield Footer()
