"""`xfertop attach`: a live view of a job started without xfertop, from py-spy samples of its stacks.

Self-contained: the screen receives a StackSampler, subscribes to it (the listener posts one coalesced
message per window), starts it on mount if nobody has, and stops it when the screen goes away. It
shows where each rank's main thread spends its samples, the DataLoader workers' and the pin-memory
thread's load, the GPU's busy share and the sampled verdict. The GPU readings come from a GPU source:
the one given (`xfertop attach`), else the live view's that opened the screen (`s` on a row).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.driver import Driver
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Static

from xfertop.analysis.sampled_verdict import JudgedWindow, judge_stacks, keep_last_judged, runs_on_gpu
from xfertop.analysis.stack_classify import CLASS_LABELS, SAMPLE_CLASSES, LineText, RankStacks
from xfertop.analysis.verdict import Verdict
from xfertop.model.gpu import GpuState
from xfertop.model.stacks import StacksState
from xfertop.sources.base import PollingSource
from xfertop.sources.stacks.source import StackSampler
from xfertop.sources.stacks.source_lines import line_reader
from xfertop.ui.terminal_watch import watch_terminal

_CLASS_STYLES = {
    "data_wait": "red",
    "main_loading": "magenta",
    "copy": "yellow",
    "gpu_sync": "blue",
    "compute": "green",
    "other": "grey50",
}
_SEVERITY_STYLES = {"info": "green", "warn": "bold yellow", "critical": "bold red"}
_BAR_CELLS = 40
#: How often the screen takes the GPU source's latest reading, and how many it keeps (more than a window's).
GPU_READ_INTERVAL_S = 0.5
GPU_READINGS_KEPT = 64


class StacksUpdated(Message, bubble=False):
    def __init__(self, state: StacksState) -> None:
        super().__init__()
        self.state = state

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, StacksUpdated)


def _bar(rank: RankStacks) -> Text:
    text = Text("  ")
    used = 0
    for cls in SAMPLE_CLASSES:
        cells = round(rank.shares.share(cls) * _BAR_CELLS)
        cells = min(cells, _BAR_CELLS - used)
        text.append("█" * cells, style=_CLASS_STYLES[cls])
        used += cells
    text.append("·" * (_BAR_CELLS - used), style="grey30")
    return text


def _rank_text(label: str, rank: RankStacks) -> Text:
    text = Text(f"{label}  pid {rank.pid}", style="bold")
    if rank.error:
        text.append(f"\n  {rank.error}", style="bold red")
        return text
    text.append(f"   {rank.shares.total_samples} main-thread samples")
    busy = rank.gpu_busy_share
    if busy is not None:
        text.append(f"; GPU busy {busy * 100:.0f}% (NVML)")
    elif runs_on_gpu(rank):
        text.append("; GPU busy not measured (NVML gave none for this process alone)")
    text.append("\n")
    text.append_text(_bar(rank))
    for cls in SAMPLE_CLASSES:
        text.append(f"\n  {rank.shares.share(cls) * 100:5.1f}%  ", style=_CLASS_STYLES[cls])
        text.append(CLASS_LABELS[cls])
    if rank.workers:
        loads = " ".join(f"{w.busy_share * 100:.0f}%" for w in rank.workers)
        # "busy" means busy more than half of the window (RankStacks.workers_busy): say so beside the loads.
        text.append(
            f"\n  {len(rank.workers)} workers, {rank.workers_busy} busy over half the window;"
            f" each busy {loads} of it"
        )
    else:
        text.append("\n  workers: none seen (num_workers=0, or not sampled)", style="dim")
    if rank.pin_busy_share is not None:
        text.append(f"\n  pin-memory thread: busy {rank.pin_busy_share * 100:.0f}%")
    return text


def attach_text(state: StacksState | None, summaries: Sequence[RankStacks], verdict: Verdict | None) -> Text:
    """Everything the screen shows, as one renderable (also what the tests look at)."""
    if state is None:
        return Text("sampling the first window with py-spy ...", style="dim")
    text = Text()
    if verdict is not None:
        text.append(verdict.headline, style=_SEVERITY_STYLES.get(verdict.severity, "bold"))
        for advice in verdict.advice:
            text.append(f"\n  - {advice}")
        text.append("\n\n")
    by_pid = {target.pid: target for target in state.targets}
    for summary in summaries:
        target = by_pid.get(summary.pid)
        label = f"rank {target.rank}" if target is not None and target.rank is not None else "process"
        text.append_text(_rank_text(label, summary))
        text.append("\n\n")
    if state.error and not summaries:
        text.append(state.error, style="bold red")
    return text


class AttachScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "close", "Back")]

    def __init__(
        self,
        sampler: StackSampler,
        line_text_for: Callable[[int], LineText | None] = line_reader,
        gpu: PollingSource[GpuState] | None = None,
    ) -> None:
        super().__init__()
        self.sampler = sampler
        self._gpu = gpu
        self.gpu_readings: deque[GpuState] = deque(maxlen=GPU_READINGS_KEPT)
        self._line_text_for = line_text_for
        self._line_text: dict[int, LineText | None] = {}
        self.summaries: tuple[RankStacks, ...] = ()
        self.verdict: Verdict | None = None
        self.state: StacksState | None = None
        self._last_judged: JudgedWindow | None = None

    def compose(self) -> ComposeResult:
        ranks = ", ".join(str(t.pid) for t in self.sampler.targets)
        title = (
            f"xfertop attach: pid {ranks}  (py-spy, {self.sampler.rate_hz} Hz, "
            f"{self.sampler.window_s} s windows, --nonblocking)"
        )
        yield Static(Text(title, style="bold"), id="attach-title")
        yield Static(attach_text(None, (), None), id="attach-body")
        yield Footer()

    def on_mount(self) -> None:
        self.sampler.subscribe(lambda state: self.post_message(StacksUpdated(state)))
        latest = self.sampler.latest()
        if latest is not None:
            self.post_message(StacksUpdated(latest))
        self.sampler.start()
        if self._gpu is None:
            from xfertop.ui.app import XfertopApp  # the live view that opened this screen

            self._gpu = self.app.sources.gpu if isinstance(self.app, XfertopApp) else None
        if self._gpu is not None:
            # Read, not subscribed: a listener on the live view's source would outlive the screen.
            self.set_interval(GPU_READ_INTERVAL_S, self._read_gpu)

    def _read_gpu(self) -> None:
        latest = self._gpu.latest() if self._gpu is not None else None
        if latest is not None and (
            not self.gpu_readings or latest.timestamp != self.gpu_readings[-1].timestamp
        ):
            self.gpu_readings.append(latest)

    def on_unmount(self) -> None:
        self.sampler.stop()

    def _lines_for(self, pid: int) -> LineText | None:
        if pid not in self._line_text:
            self._line_text[pid] = self._line_text_for(pid)
        return self._line_text[pid]

    def on_stacks_updated(self, message: StacksUpdated) -> None:
        self.state = message.state
        self._read_gpu()  # the reading at the window's end, whatever the timer managed meanwhile
        self.summaries, verdict = judge_stacks(message.state, self._lines_for, tuple(self.gpu_readings))
        self.verdict, self._last_judged = keep_last_judged(
            verdict, message.state.timestamp, self._last_judged
        )
        self.query_one("#attach-body", Static).update(attach_text(self.state, self.summaries, self.verdict))

    def action_close(self) -> None:
        self.dismiss(None)


class AttachApp(App[int]):
    """`xfertop attach PID` on its own: just the attach screen."""

    TITLE = "xfertop attach"

    def __init__(self, sampler: StackSampler, gpu: PollingSource[GpuState] | None = None) -> None:
        super().__init__()
        self._sampler = sampler
        self._gpu = gpu

    def get_driver_class(self) -> type[Driver]:
        """The viewer's driver (ui/textual_compat.py): it lets go of a terminal that went away."""
        from xfertop.ui.textual_compat import driver_class_for

        return driver_class_for(super().get_driver_class())

    def on_mount(self) -> None:
        watch_terminal(self)  # a dropped SSH session: leave quietly, like the main viewer
        if self._gpu is not None:
            self._gpu.start()
        self.push_screen(AttachScreen(self._sampler, gpu=self._gpu), callback=lambda _: self.exit(0))

    def on_unmount(self) -> None:
        if self._gpu is not None:
            self._gpu.stop()
