"""Which loader's ``num_workers`` the ring reports: the loader that feeds training.

A job iterates several loaders (training, validation, Lightning's sanity check, two zipped ones). The
longest single iteration is the training loader's; of iterations as long, within a step (zipped loaders
advance by turns), the one that waits longer a step is the loader that holds training up, whichever of
them ``zip`` asks first. Pure bookkeeping, tested on its own (tests/reporter/test_epochs.py,
tests/reporter/test_zipped_loaders.py).
"""

from __future__ import annotations

import time
from types import FrameType

#: A next() on another loader that begins this soon after the open step's batch arrived, with no copy in
#: between, fetches part of the same step: ``for a, b in zip(loader_a, loader_b)``, Lightning's
#: CombinedLoader, a second (unlabelled) iterator read right after the first. Its wait joins the step's
#: instead of closing a step that did no work. Most training steps' host work (forward, backward,
#: optimizer step) takes longer than this, but a tiny model's may not: where the watch sees the model, a
#: model call between the two fetches ends the join whatever the time (ZippedFetches.joins).
JOINED_FETCH_NS = 200_000
_thread_ns = time.thread_time_ns


class LoaderWorkers:
    __slots__ = ("_namer", "_namer_mean_wait_ns", "longest_iteration", "workers")

    def __init__(self) -> None:
        #: The workers count of the loader that names them; None until one does.
        self.workers: int | None = None
        #: Steps of the longest single iteration over a loader so far.
        self.longest_iteration = 0
        #: Which iteration names the workers (id of its iterator wrapper, never a reference: a finished
        #: epoch's iterator must be free to shut its workers down) and its mean wait per step.
        self._namer = 0
        self._namer_mean_wait_ns = 0.0

    def count(self, steps: int, workers: int | None, source: int = 0, wait_ns: int = 0) -> bool:
        """An iteration over a loader (``source``: its iterator; 0 unknown) reached ``steps`` steps, having
        waited ``wait_ns`` in all. Returns whether the workers count changed."""
        if source and source == self._namer and workers == self.workers:
            # The iteration that names the workers goes on (every step of a first epoch): only its length
            # and its mean wait move.
            if steps > self.longest_iteration:
                self.longest_iteration = steps
            self._namer_mean_wait_ns = wait_ns / steps
            return False
        mean_wait = wait_ns / steps if steps else 0.0
        longest = self.longest_iteration
        namer = bool(source) and source == self._namer  # the iteration that names them goes on
        longer = steps > longest + 1 or (steps > longest and not source)
        waits_more = steps >= longest and mean_wait > self._namer_mean_wait_ns
        if not (namer or longer or waits_more):
            return False
        self.longest_iteration = max(longest, steps)
        self._namer = source
        self._namer_mean_wait_ns = mean_wait
        if workers is None or workers == self.workers:
            return False
        self.workers = workers
        return True


class ZippedFetches:
    """Whether a next() on another loader right after the open step's batch arrived joins that step.

    Asked from the same call (``zip``'s one instruction in the loop's frame, Lightning's CombinedLoader
    asking each iterator in turn) before the step has done any work the watch sees: the loop has not moved
    on, so it joins however long it took. ``for a, b in zip(fast, slow)`` split a step in two now and then
    where a garbage collection, or interrupt time the kernel books to the loop's thread, fell between the
    two fetches (31 steps for 30 in CI). Otherwise by time: within ``JOINED_FETCH_NS`` of the batch on the
    wall clock, or of the loop thread's CPU time (on a busy machine the loop can be preempted between the
    two fetches, a scheduler slice of ~4 ms while the loaders' workers start: wall time passes, its CPU time
    does not). The call site and the thread's CPU clock (a system call, ~0.7 us) are read at a step's batch
    only for the first steps (where zip shows itself) and for jobs where a second loader's fetch has joined
    a step (tests/reporter/test_zipped_loaders.py)."""

    __slots__ = ("_early", "_opened_cpu_ns", "_opened_site", "site", "watching", "zipped")

    def __init__(self) -> None:
        self.zipped = False
        self._early = 3  # steps still to read the CPU clock for before a second loader has been seen
        self._opened_cpu_ns = 0  # the loop thread's CPU time when the open step's batch arrived (0: unread)
        #: ``opened`` has something to do (early steps, or zipped loaders seen): the clock asks this first,
        #: so that a single loader's steps make no call.
        self.watching = True
        #: Where the next() being asked was called from, while watching (``asked_from``); None: not read.
        self.site: tuple[int, int] | None = None
        self._opened_site: tuple[int, int] | None = None  # the call that fetched the open step's batch

    def asked_from(self, frame: FrameType | None) -> None:
        """A watched next() is asked from ``frame`` (its caller's; None where no Python code called it): the
        frame and its instruction, never a reference (the loop's frame holds its batches)."""
        self.site = (id(frame), frame.f_lasti) if frame is not None else None

    def opened(self) -> None:
        """The open step's (last) batch arrived."""
        self._opened_site, self.site = self.site, None
        if self.zipped or self._early:
            self._early = max(self._early - 1, 0)
            self._opened_cpu_ns = _thread_ns()
        else:
            self._opened_cpu_ns = 0
            self._opened_site = None
            self.watching = False

    def joins(self, since_batch_ns: int, model_watched: bool = False, worked: bool = False) -> bool:
        """Another loader asks ``since_batch_ns`` after the open step's batch arrived, no copy between.
        ``model_watched``: the watch sees the job's model calls; ``worked``: the step has made one, so the
        loop has moved on (loaders asked in turns, ``next(iterators[step % 2])``, a tiny model between)."""
        if worked:
            return False
        site = self.site
        if (
            since_batch_ns <= JOINED_FETCH_NS
            or (model_watched and site is not None and site == self._opened_site)
            or (self._opened_cpu_ns and _thread_ns() - self._opened_cpu_ns <= JOINED_FETCH_NS)
        ):
            # Zipped: from now on every step reads the CPU clock. Only a fetch that joins counts: a new
            # epoch's first next() also asks inside the step before it, and must not cost every step a
            # system call.
            self.zipped = self.watching = True
            return True
        return False
