"""`xfertop replay`: the live view over a recording, with keys to pause, step and seek and a status line
("replay 12:03:04 (3/240) paused").

The app is the live view's own (XfertopApp), handed sources that publish the recording's frames
(export/replay_player.py) instead of sampling; this subclass adds only the replay keys, the status line
and the header clock showing the recorded time. Nothing here samples anything.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static

from xfertop.export.replay_player import ReplayPlayer, ReplaySource
from xfertop.sources.bundle import JOBS_INTERVAL_S, Sources, host_interval_s
from xfertop.sources.stacks.source import StackSampler
from xfertop.ui.app import XfertopApp

#: Page up / page down seek this many seconds of recorded time.
SEEK_S = 60.0
STATUS_REFRESH_S = 0.25


class _NoLiveStacks(StackSampler):
    """The `s` key in a replay: the recorded processes are not there to attach to (a pid may name another
    process now)."""

    def problem(self) -> str | None:
        return "this is a replay of a recording: there is no live process to sample with py-spy"


def replay_sources(player: ReplayPlayer, interval_s: float) -> Sources:
    """The recording's parts as the app's sources, each at the pace of the live source it stands for."""
    return Sources(
        gpu=ReplaySource(player, "gpu", interval_s),
        host=ReplaySource(player, "host", host_interval_s(interval_s)),
        jobs=ReplaySource(player, "jobs", JOBS_INTERVAL_S),
        topology=ReplaySource(player, "topology", interval_s),
        stack_sampler=_NoLiveStacks,
    )


class ReplayStatus(Static):
    DEFAULT_CSS = """
    ReplayStatus { height: 1; dock: bottom; background: $boost; color: $text; padding: 0 1; }
    """

    def __init__(self, player: ReplayPlayer) -> None:
        self._shown = player.status()
        super().__init__(self._shown)
        self._player = player

    def on_mount(self) -> None:
        self.set_interval(STATUS_REFRESH_S, self.show_status)
        self._player.on_move(self.show_status)  # moves come from the keys, on this (the app's) thread

    def show_status(self) -> None:
        status = self._player.status()
        if status != self._shown:  # a paused replay repaints nothing
            self._shown = status
            # One docked row whatever it says: no layout of the screen (by default each update laid it
            # out again, 30% of a replay's main thread at 1 Hz: docs/ui.md).
            self.update(status, layout=False)


class ReplayApp(XfertopApp):
    """The live view over a recording."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "replay_pause", "Play/pause", priority=True),
        Binding("left", "replay_step(-1)", "Step back", key_display="←", priority=True),
        Binding("right", "replay_step(1)", "Step", key_display="→", priority=True),
        Binding("pageup", "replay_seek(-1)", f"Back {SEEK_S:.0f} s", show=False, priority=True),
        Binding("pagedown", "replay_seek(1)", f"On {SEEK_S:.0f} s", show=False, priority=True),
        Binding("home", "replay_to(0)", "First frame", show=False, priority=True),
        Binding("end", "replay_to(-1)", "Last frame", show=False, priority=True),
    ]

    def __init__(self, player: ReplayPlayer, *, interval_s: float = 1.0) -> None:
        super().__init__(
            replay_sources(player, interval_s), interval_s=interval_s, clock=player.recorded_time
        )
        self.player = player

    def compose(self) -> ComposeResult:
        yield from super().compose()
        self.replay_status = ReplayStatus(self.player)
        yield self.replay_status

    def action_replay_pause(self) -> None:
        self.player.toggle_pause()

    def action_replay_step(self, frames: int) -> None:
        self.player.step(frames)

    def action_replay_seek(self, direction: int) -> None:
        self.player.seek_by_s(direction * SEEK_S)

    def action_replay_to(self, index: int) -> None:
        self.player.seek(index if index >= 0 else len(self.player.frames) - 1)
