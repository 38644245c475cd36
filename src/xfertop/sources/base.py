"""The one shape every sampler has: a daemon thread that calls ``sample()`` and publishes the result."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from xfertop import startup_trace

T = TypeVar("T")


class PollingSource(Generic[T]):
    """Runs ``sample()`` every ``interval_s`` on its own thread and keeps the latest result.

    Subclasses implement ``sample()``; it must not raise for expected failures (missing driver,
    dead process): put the reason in the snapshot instead. An unexpected exception is kept in
    ``last_error`` (with ``failing_since``, the wall time of the first of a run of failures) and the loop
    carries on: the faces say so (``failure``) while the source's latest snapshot goes stale. Listeners are
    called on the source thread with each new snapshot; they must be quick and thread-safe (Textual's
    ``post_message`` is).
    """

    name = "source"

    def __init__(self, interval_s: float) -> None:
        self._interval_s = interval_s
        self._latest: T | None = None
        self._listeners: list[Callable[[T], object]] = []
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._published = threading.Condition()
        self._poked = False
        self.last_error: str | None = None
        self.failing_since: float | None = None

    # -- to implement -------------------------------------------------------------------------
    def sample(self) -> T:
        raise NotImplementedError

    def close(self) -> None:
        """Release resources (called on the source thread after the loop ends)."""

    def next_interval_s(self) -> float:
        """How long after the last sample's start the next one starts: ``interval_s``; a source whose
        data may be lost when read too seldom (the jobs' rings) shortens it."""
        return self._interval_s

    # -- public ---------------------------------------------------------------------------------
    @property
    def interval_s(self) -> float:
        return self._interval_s

    @interval_s.setter
    def interval_s(self, value: float) -> None:
        self._interval_s = value
        self._wake.set()

    def subscribe(self, listener: Callable[[T], object]) -> None:
        self._listeners.append(listener)

    def latest(self) -> T | None:
        return self._latest

    @property
    def failing(self) -> bool:
        """The last sample raised (and none has succeeded since)."""
        return self.failing_since is not None

    def failure(self) -> str | None:
        """One line on a source whose samples keep failing (None while they succeed): since when, why, and
        that what it feeds shows its last good sample."""
        error, since = self.last_error, self.failing_since
        if error is None or since is None:
            return None
        stale = "its figures are from its last good sample" if self._latest is not None else "no figures yet"
        since_text = time.strftime("%H:%M:%S", time.localtime(since))
        return f"{self.name} sampling fails since {since_text} ({error}): {stale}"

    def sample_once(self) -> T:
        """Sample on the calling thread and publish (for ``--once`` and tests)."""
        snapshot = self.sample()
        self._publish(snapshot)
        return snapshot

    def wait_for_sample(self, timeout_s: float) -> T | None:
        """Block until at least one snapshot has been published, or the timeout passes."""
        with self._published:
            self._published.wait_for(lambda: self._latest is not None, timeout=timeout_s)
        return self._latest

    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name=f"xfertop-{self.name}", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 2.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def poke(self) -> None:
        """Sample now instead of waiting out the interval."""
        self._poked = True
        self._wake.set()

    # -- internals --------------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                started = time.monotonic()
                try:
                    self._publish(self.sample())
                    self.last_error = self.failing_since = None
                except Exception as exc:  # a sampler must outlive a bad sample
                    self.last_error = f"{type(exc).__name__}: {exc}"
                    if self.failing_since is None:
                        self.failing_since = time.time()
                self._wait_for_next(started)
        finally:
            self.close()

    def _wait_for_next(self, started: float) -> None:
        """Wait out the interval from the last sample's start. A new interval only reschedules: sampling
        at once would close a window of a few ms (the GPU source then has no PCIe interval to report:
        "RX n/a" after the app sets its interval at start-up; docs/gpu-source.md). poke() samples now."""
        while not self._stop.is_set() and not self._poked:
            remaining = self.next_interval_s() - (time.monotonic() - started)
            if remaining <= 0:
                break
            self._wake.wait(remaining)
            self._wake.clear()
        self._poked = False

    def _publish(self, snapshot: T) -> None:
        startup_trace.mark_once(f"{self.name}: first snapshot published")
        with self._published:
            self._latest = snapshot
            self._published.notify_all()
        for listener in list(self._listeners):
            listener(snapshot)


class FailureNews:
    """For a headless face's log (`xfertop export`, `xfertop record`): one line when a source's samples
    start failing (with the error and ``meanwhile``, what the face does about it), one when they work
    again; nothing while nothing changes."""

    def __init__(self, sources: Iterable[PollingSource], meanwhile: str) -> None:
        self._sources = list(sources)
        self._meanwhile = meanwhile
        self._said: set[str] = set()  # the sources whose failure was told

    def news(self) -> list[str]:
        lines = []
        for source in self._sources:
            error = source.last_error  # read once: the source's thread may clear it meanwhile
            said = source.name in self._said
            if error is not None and not said:
                self._said.add(source.name)
                lines.append(f"{source.name} sampling fails ({error}): {self._meanwhile}")
            elif error is None and said:
                self._said.discard(source.name)
                lines.append(f"{source.name} sampling works again")
        return lines
