"""The sampler loop every source shares: interval changes reschedule, poke() samples now; a headless
face's log hears once when a source starts failing and once when it works again."""

from __future__ import annotations

import threading
import time

from ui.live import BreakableHostSource
from xfertop.sources.base import FailureNews, PollingSource


class _Clock(PollingSource[float]):
    name = "clock"

    def __init__(self, interval_s: float) -> None:
        super().__init__(interval_s)
        self.samples: list[float] = []
        self.second = threading.Event()
        self.subscribe(self._record)

    def sample(self) -> float:
        return time.monotonic()

    def _record(self, at: float) -> None:
        self.samples.append(at)
        if len(self.samples) >= 2:
            self.second.set()


def test_a_new_interval_reschedules_instead_of_sampling_at_once() -> None:
    """H200: the app set the GPU source's interval at start-up and the sample that followed at once
    covered a few ms, with no PCIe interval in it: the pane read "RX n/a"."""
    source = _Clock(interval_s=0.3)
    source.start()
    try:
        assert source.wait_for_sample(5.0) is not None
        source.interval_s = 0.25
        assert source.second.wait(5.0)
        assert source.samples[1] - source.samples[0] >= 0.2
    finally:
        source.stop()


def test_poke_samples_now() -> None:
    source = _Clock(interval_s=60.0)
    source.start()
    try:
        assert source.wait_for_sample(5.0) is not None
        source.poke()
        assert source.second.wait(5.0), "poke() did not sample within 5 s of a 60 s interval"
    finally:
        source.stop()


def test_a_shorter_interval_takes_effect_without_waiting_out_the_old_one() -> None:
    source = _Clock(interval_s=60.0)
    source.start()
    try:
        assert source.wait_for_sample(5.0) is not None
        source.interval_s = 0.1
        assert source.second.wait(5.0), "the new 0.1 s interval waited for the old 60 s one"
    finally:
        source.stop()


def test_failure_news_tells_each_change_of_the_source_that_changed_once() -> None:
    host, clock = BreakableHostSource(), _Clock(interval_s=0.05)
    news = FailureNews([clock, host], "frames keep its last good sample")
    host.broken.set()
    for source in (clock, host):
        source.start()
    try:
        assert host.failed.wait(10) and clock.second.wait(10)
        assert news.news() == ["host sampling fails (KeyError: 'cpu7'): frames keep its last good sample"]
        assert news.news() == []  # said once, not at every frame
        host.broken.clear()
        assert host.recovered.wait(10)
        assert news.news() == ["host sampling works again"]
        assert news.news() == []
    finally:
        for source in (clock, host):
            source.stop()
