"""The way in for the sources' snapshots: from their threads into the ViewState, and which panes that dirties.

Each source thread calls a listener of ours with a new snapshot. The GPU and topology listeners post one
message (Textual coalesces them to the latest); the host and jobs listeners put the snapshot in an inbox
and post a message only for the first one and for a job shape change (a job or rank came, went or changed
state): a message each cost the app about as much as drawing a changed table row. On the app's thread,
the message handlers and each repaint move the snapshots into the ViewState (``take``) and mark the panes
they feed dirty (``dirty``); the app's Repainter (ui/repaint.py) draws those. Nothing here draws.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable
from typing import Any

from textual.message import Message

from xfertop.model.gpu import GpuState
from xfertop.model.host import HostState
from xfertop.model.jobs import JobsState
from xfertop.sources.base import PollingSource
from xfertop.sources.bundle import HOST_MIN_INTERVAL_S, Sources
from xfertop.ui.messages import (
    GpuStateUpdated,
    HostStateUpdated,
    JobsStateUpdated,
    LatestSnapshot,
    TopologyUpdated,
)
from xfertop.ui.view_state import ViewState


class SnapshotInbox:
    """The listeners the sources call (on their threads) and what the app's thread does with what they
    published. ``post``: the app's thread-safe ``post_message``."""

    def __init__(self, view: ViewState, post: Callable[[Message], object]) -> None:
        self.view = view
        self._post = post
        #: Panes whose data changed since they were last drawn ("gpus", "host", "jobs", "processes").
        self.dirty: set[str] = set()
        # Filled on the source threads (see subscribe), emptied by take on the app's thread.
        self._host_inbox: deque[HostState] = deque()
        self._host_posted = False
        self._jobs_latest: JobsState | None = None
        self._jobs_posted_shape: tuple | None = None
        #: The job shape last drawn at once (jobs_arrived).
        self._jobs_shape: tuple = ()

    # -- on the sources' threads ----------------------------------------------------------------------
    def subscribe(self, sources: Sources) -> None:
        """Listen to every source there is; what one already holds comes in as if just published."""
        pairs: tuple[tuple[PollingSource | None, Callable[[Any], LatestSnapshot]], ...] = (
            (sources.gpu, GpuStateUpdated),
            (sources.topology, TopologyUpdated),
        )
        for source, message in pairs:
            if source is None:
                continue
            source.subscribe(functools.partial(self._post_snapshot, message))
            latest = source.latest()
            if latest is not None:
                self._post(message(latest))
        # Host snapshots and ring reads only mark panes dirty for the next repaint: they wait in an
        # inbox the repaint empties, and wake the app (a message) only when they must be drawn at once.
        if sources.host is not None:
            sources.host.subscribe(self._host_published)
            if (latest_host := sources.host.latest()) is not None:
                self._host_published(latest_host)
        if sources.jobs is not None:
            sources.jobs.subscribe(self._jobs_published)
            if (latest_jobs := sources.jobs.latest()) is not None:
                self._jobs_published(latest_jobs)

    def _post_snapshot(self, message: Callable[[Any], LatestSnapshot], state: object) -> None:
        """On a source's thread: post_message is thread-safe, nothing else here is touched."""
        self._post(message(state))

    def _host_published(self, state: HostState) -> None:
        """On the host source's thread: the first snapshot is drawn at once, the others at the next
        repaint."""
        if self._host_posted:
            self._host_inbox.append(state)  # deque: append and popleft are safe across threads
        else:
            self._host_posted = True
            self._post(HostStateUpdated(state))

    def _jobs_published(self, state: JobsState) -> None:
        """On the jobs source's thread: the latest read waits for the next repaint, unless its shape
        changed (drawn at once)."""
        self._jobs_latest = state
        shape = jobs_shape(state)
        if self._jobs_posted_shape is None or shape != self._jobs_posted_shape:
            self._jobs_posted_shape = shape
            self._post(JobsStateUpdated(state))

    # -- on the app's thread --------------------------------------------------------------------------
    def take(self) -> None:
        """Apply what the host and jobs sources published since the last look."""
        inbox = self._host_inbox
        while inbox:
            if self._apply_host(inbox.popleft()):
                self.dirty.update(("host", "processes"))
        jobs = self._jobs_latest
        if jobs is not None and jobs is not self.view.jobs and self._apply_jobs(jobs):
            self.dirty.update(("jobs", "processes"))

    def take_dirty(self) -> set[str]:
        """The dirty panes, now marked clean: the caller draws them."""
        dirty, self.dirty = self.dirty, set()
        return dirty

    def gpu_arrived(self, state: GpuState) -> None:
        """A GPU sample (its message). Verdicts read the GPU's utilisation and the process table its
        processes: at the jobs' pace or slower, each sample dirties them too; faster, they keep their
        own pace (each jobs and host snapshot dirties them, and they read the latest GPU sample then):
        at 4 Hz that halves the jobs' analysis and drawing, and the header says so."""
        self.view.apply_gpu(state)
        if self.view.interval_s >= HOST_MIN_INTERVAL_S:
            self.dirty.update(("gpus", "jobs", "processes"))
        else:
            self.dirty.add("gpus")

    def host_arrived(self, state: HostState) -> bool:
        """A host snapshot that came as a message; True when it must be drawn at once (the first)."""
        first = self.view.host is None
        self.take()
        self._apply_host(state)
        self.dirty.update(("host", "processes"))
        return first

    def jobs_arrived(self, state: JobsState) -> bool:
        """A jobs snapshot that came as a message (only the first and shape changes do); True when it
        must be drawn at once: the first, or a job or rank came, went or changed state."""
        first = self.view.jobs is None
        self.take()
        self._apply_jobs(state)
        self.dirty.update(("jobs", "processes"))
        shape = jobs_shape(self.view.jobs)
        if first or shape != self._jobs_shape:
            self._jobs_shape = shape
            return True
        return False

    def _apply_host(self, state: HostState) -> bool:
        """Apply a host snapshot unless a newer one is already shown (a message may overtake the inbox)."""
        if self.view.host is not None and state.timestamp < self.view.host.timestamp:
            return False
        self.view.apply_host(state)
        return True

    def _apply_jobs(self, state: JobsState) -> bool:
        """Apply a jobs snapshot unless a newer one is already shown."""
        if self.view.jobs is not None and state.timestamp < self.view.jobs.timestamp:
            return False
        self.view.apply_jobs(state)
        return True


def jobs_shape(state: JobsState | None) -> tuple:
    """Which ranks exist and in what state: a change here is drawn at once, new steps at the display rate."""
    if state is None:
        return ()
    return tuple((job.job_key, tuple((rank.pid, rank.status) for rank in job.ranks)) for job in state.jobs)
