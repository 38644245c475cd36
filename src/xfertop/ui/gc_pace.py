"""The live view's pace for Python's cyclic garbage collector.

A frame allocates thousands of short-lived containers (Textual's strips and segments, rich's Text), and
many survive a young collection in caches, so with Python's default thresholds the collector ran about
twice a second and took ~0.8 ms of CPU a second in a 160x48 view at 1 Hz (a young pass ~0.2 ms, a
middle one ~2 ms, a full one 36-40 ms once a minute; CPU VM, docs/measurements/cpu-2026-12-06-s39/).
Frozen after the first frame, the objects that live as long as the view (Textual's and rich's modules,
the widgets, the stylesheet) are never traversed again, and a ten times larger young generation is
collected ten times less often. Reference counting frees what is not in a cycle as before.
"""

from __future__ import annotations

import gc
from collections.abc import Callable

#: Young-generation threshold while the view runs (Python's default is 700 in 3.8-3.13).
YOUNG_THRESHOLD = 7000


def settle() -> Callable[[], None]:
    """Collect once, freeze what exists now, and collect the young generation less often. Returns the
    undo, for a view that ends in a process that goes on (a test's)."""
    thresholds = gc.get_threshold()
    gc.collect()  # so that startup's garbage is not frozen with the rest
    gc.freeze()
    gc.set_threshold(max(thresholds[0], YOUNG_THRESHOLD), *thresholds[1:])

    def undo() -> None:
        gc.set_threshold(*thresholds)
        gc.unfreeze()

    return undo
