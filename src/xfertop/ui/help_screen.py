"""The keys, in one place (also reachable from the command palette)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from xfertop.ui.rank_row import SEGMENTS

_HELP = """\
[b]keys[/b]
  q      quit                     p      pause / resume the display
  + / -  sample faster / slower   ?      this help
  b      benchmarks               a      acceptance check (selected GPU)
  t      topology: GPU links, PCIe paths, NUMA nodes, where ranks run
  s      py-spy stacks of the process or job rank under the cursor
  f      show / fold ended jobs   m      monochrome (kept for next time)
  enter  detail of the focused GPU or rank     escape  back
  tab    between GPUs, jobs and processes      ctrl+p  command palette

[b]reading it[/b]
  RX is host to device, TX device to host, against what the link carries
  now: "RX 54.9 GB/s of 63.0 (Gen5 x16)". "sampled" (or "~" on one line)
  marks a 20 ms NVML sample instead of counters covering all the time.
  A rank's bar is its host step: {W} wait for data, {L} the loop's own work,
  {C} copy, {M} model, {S} sync. GPU busy/idle: the GPU's own clock.
  GPU memory is in decimal GB, host memory in binary units.

escape or ? closes this help; q quits"""
#: The bar's letters in the bar's own styles (rank_row.SEGMENTS), so the help cannot drift from it.
HELP_TEXT = _HELP.format_map({letter: f"[{style}]{letter}[/]" for _, letter, style in SEGMENTS})


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close"),
        Binding("question_mark", "dismiss", "Close"),
        Binding("q", "app.quit", "Quit", show=False),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="help"):
            yield Static(HELP_TEXT)
