"""Playing a recording back: which frame is shown now (at the recorded pace, paused, stepped, sought), and
sources that publish that frame's snapshots as the live sources publish theirs, so the app that renders
the live view renders a recording unchanged.
"""

from __future__ import annotations

import bisect
import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from xfertop.export.recording import Snapshot
from xfertop.sources.base import PollingSource

T = TypeVar("T")


class ReplayPlayer:
    """The position in a recording. Playing, it follows the recorded times (``speed`` x as fast) from where
    play last started; it stops on the last frame. Thread-safe: the sources read it, the keys move it."""

    def __init__(self, frames: Sequence[Snapshot], clock: Callable[[], float] = time.monotonic) -> None:
        if not frames:
            raise ValueError("a recording with no frames cannot be played")
        self.frames = tuple(frames)
        self._times = [frame.time for frame in self.frames]
        self._clock = clock
        self._lock = threading.Lock()
        self._index = 0
        self._paused = False
        self.speed = 1.0
        #: Where play last started: the frame, and the clock then.
        self._anchor = 0
        self._anchor_clock_s = clock()
        self._listeners: list[Callable[[], object]] = []

    def on_move(self, listener: Callable[[], object]) -> None:
        """``listener`` is called after every pause, step or seek (to sample at once)."""
        self._listeners.append(listener)

    @property
    def paused(self) -> bool:
        return self._paused

    def position(self) -> int:
        """The index of the frame shown now."""
        with self._lock:
            if not self._paused:
                played_s = (self._clock() - self._anchor_clock_s) * self.speed
                target = self._times[self._anchor] + played_s
                self._index = max(self._anchor, bisect.bisect_right(self._times, target) - 1)
            return self._index

    def frame(self) -> Snapshot:
        return self.frames[self.position()]

    def _moved(self, index: int, paused: bool) -> None:
        with self._lock:
            self._index = min(max(index, 0), len(self.frames) - 1)
            self._anchor = self._index
            self._anchor_clock_s = self._clock()
            self._paused = paused
        for listener in list(self._listeners):
            listener()

    def toggle_pause(self) -> None:
        index = self.position()
        at_end = index == len(self.frames) - 1
        # Play from the last frame starts again from the first.
        self._moved(0 if self._paused and at_end else index, paused=not self._paused)

    def step(self, frames: int) -> None:
        """Move ``frames`` frames (negative: back) and pause there."""
        self._moved(self.position() + frames, paused=True)

    def seek(self, index: int) -> None:
        """Go to frame ``index`` (clamped), keeping play or pause as it is."""
        self._moved(index, paused=self._paused)

    def seek_by_s(self, seconds: float) -> None:
        """Go to the frame ``seconds`` of recorded time away from the one shown."""
        target = self._times[self.position()] + seconds
        index = (
            bisect.bisect_right(self._times, target) - 1
            if seconds > 0
            else bisect.bisect_left(self._times, target)
        )
        self.seek(index)

    def status(self) -> str:
        """ "replay 12:03:04 (3/240) paused" """
        index = self.position()
        clock = time.strftime("%H:%M:%S", time.localtime(self.frames[index].time))
        state = "paused" if self._paused else ("end" if index == len(self.frames) - 1 else "playing")
        return f"replay {clock} ({index + 1}/{len(self.frames)}) {state}"

    def recorded_time(self) -> float:
        """The recorded wall time of the frame shown (the header's clock in a replay)."""
        return self.frames[self.position()].time


class ReplaySource(PollingSource[T], Generic[T]):
    """Publishes one part (``gpu``, ``host``, ``jobs``, ``topology``) of the frame shown, at its own pace
    like the live source it stands for. The snapshot's ``timestamp`` is set to when it was first published:
    the app keeps the newest of each kind, and stepping back must still be drawn."""

    def __init__(self, player: ReplayPlayer, part: str, interval_s: float) -> None:
        super().__init__(interval_s)
        self.name = f"replay-{part}"
        self._player = player
        self._part = part
        self._shown: tuple[int, Any] | None = None
        player.on_move(self.poke)

    def sample(self) -> T:
        index = self._player.position()
        if self._shown is not None and self._shown[0] == index:
            return self._shown[1]
        value = getattr(self._player.frames[index], self._part)
        if value is None:
            if self._shown is None:
                raise LookupError(f"the recording has no {self._part} snapshot yet at frame {index + 1}")
            return self._shown[1]
        published = dataclasses.replace(value, timestamp=time.time())
        self._shown = (index, published)
        return published
