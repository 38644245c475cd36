"""The keys, in one place (also reachable from the command palette)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

HELP_TEXT = """\
[b]xfertop keys[/b]

  q         quit
  p         pause / resume the display (sampling goes on)
  + / -     sample faster / slower (0.25 s to 5 s)
  tab       move between GPUs, jobs and processes
  enter     detail of the focused GPU or job rank
  escape    back
  ctrl+p    command palette
  ?         this help

[b]reading it[/b]
  RX is host to device, TX device to host, against what the link carries now
  ("of 63.0 (Gen5 x16)"). "sampled" (or "~" on one line) means a 20 ms NVML sample,
  not all the time. Memory on GPUs is in decimal GB, host memory in binary units.
  A job's bar: [red]data wait[/red] [yellow]copy[/yellow] [green]compute[/green], as shares of each step.
  GPU idle is the part of the wait the GPU actually felt.

escape or ? closes this help"""


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close"),
        Binding("question_mark", "dismiss", "Close"),
        Binding("q", "dismiss", "Close", show=False),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="help"):
            yield Static(HELP_TEXT)
