"""The topology screen (`t`): placement warnings, GPU-to-GPU matrix, PCIe paths, where ranks run.

Renders ``app.view.topology`` (published by the TopologySource every few seconds) and recomputes the
warnings each time, so a slow link is reported only while its GPU carries traffic now.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from xfertop.analysis.pcie_link import gpus_under_load
from xfertop.analysis.placement import placement_warnings
from xfertop.ui.topology_text import matrix_text, path_text, placement_text, summary_text
from xfertop.ui.view_state import ViewState


class TopologyScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,t", "app.pop_screen", "Back"),
        Binding("r", "reread", "Read again"),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="topology"):
            yield Static(id="topology-summary")
            yield Static(id="topology-matrix")
            yield Static(id="topology-paths")
            yield Static(id="topology-processes")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.show(self.app.view)  # type: ignore[attr-defined]

    def show(self, view: ViewState) -> None:
        topology = view.topology
        warnings = placement_warnings(topology, gpus_under_load(view.gpu)) if topology else ()
        self.query_one("#topology-summary", Static).update(summary_text(topology, warnings))
        for widget_id, render in (
            ("#topology-matrix", matrix_text),
            ("#topology-paths", path_text),
            ("#topology-processes", placement_text),
        ):
            widget = self.query_one(widget_id, Static)
            widget.display = topology is not None
            if topology is not None:
                widget.update(render(topology))

    def action_reread(self) -> None:
        source = self.app.sources.topology  # type: ignore[attr-defined]
        if source is not None:
            source.poke()
