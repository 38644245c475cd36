"""Which loader's ``num_workers`` the ring reports: the loader that feeds training.

A job iterates several loaders (training, validation, Lightning's sanity check, two zipped ones). The
longest single iteration is the training loader's; of iterations as long, within a step (zipped loaders
advance by turns), the one that waits longer a step is the loader that holds training up, whichever of
them ``zip`` asks first. Pure bookkeeping, tested on its own (tests/reporter/test_epochs.py,
tests/reporter/test_zipped_loaders.py).
"""

from __future__ import annotations


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
