"""Helpers for driving the real app with real sources, only NVML faked (fakes.fake_pynvml)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from textual.message import Message

from fakes.fake_pynvml import FakePynvml
from xfertop.model.host import HostState
from xfertop.sources.bundle import Sources
from xfertop.sources.gpu.nvml_api import NvmlApi
from xfertop.sources.gpu.source import GpuSource
from xfertop.sources.host.source import HostSource
from xfertop.ui.app import XfertopApp
from xfertop.ui.messages import GpuStateUpdated


def fake_gpu_source(nvml: FakePynvml, interval_s: float = 0.1) -> GpuSource:
    return GpuSource(interval_s=interval_s, api=NvmlApi(lib=nvml), first_window_s=0.0)


class MessageWaiter:
    """A message_hook that lets a test await the next message of a kind instead of sleeping."""

    def __init__(self) -> None:
        self._waiting: list[tuple[Callable[[Message], bool], asyncio.Event]] = []

    def __call__(self, message: Message) -> None:
        for predicate, event in self._waiting:
            if predicate(message):
                event.set()

    async def wait_for(self, predicate: Callable[[Message], bool], timeout_s: float = 10.0) -> None:
        event = asyncio.Event()
        self._waiting.append((predicate, event))
        try:
            await asyncio.wait_for(event.wait(), timeout_s)
        finally:
            self._waiting.remove((predicate, event))


def gpu_update_where(condition: Callable[[GpuStateUpdated], bool]) -> Callable[[Message], bool]:
    return lambda message: isinstance(message, GpuStateUpdated) and condition(message)


def live_app(nvml: FakePynvml, interval_s: float = 0.1) -> tuple[XfertopApp, Sources]:
    sources = Sources(gpu=fake_gpu_source(nvml, interval_s), host=HostSource(interval_s=interval_s))
    return XfertopApp(sources, interval_s=1.0), sources


class BreakableHostSource(HostSource):
    """The real host source; ``broken`` makes its samples raise as a bug in it would.

    Its events are set at the start of a sample, once the source's loop has dealt with the one before:
    ``failed`` at a second failing sample (the first failure is recorded by then), ``recovered`` at a
    second good sample after failures (the first one is published and the failure cleared by then)."""

    def __init__(self) -> None:
        super().__init__(interval_s=0.05)
        self.broken = threading.Event()
        self.failed = threading.Event()
        self.recovered = threading.Event()
        self._raised = False  # a sample raised
        self._good_after = False  # a good sample came after one that raised

    def sample(self) -> HostState:
        if self.broken.is_set():
            if self._raised:
                self.failed.set()
            self._raised = True
            raise KeyError("cpu7")
        if self._good_after:
            self.recovered.set()
        state = super().sample()
        self._good_after = self._raised
        return state
