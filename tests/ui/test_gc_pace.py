"""The live view's collector pace (ui/gc_pace.py): cycles are still collected, and the undo gives a
process that goes on its collector back as it was."""

from __future__ import annotations

import gc
import weakref

from xfertop.ui import gc_pace


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_settled_collector_still_frees_cycles_and_the_undo_restores_it() -> None:
    before = gc.get_threshold()
    frozen_before = gc.get_freeze_count()
    undo = gc_pace.settle()
    try:
        assert gc.get_threshold()[0] >= gc_pace.YOUNG_THRESHOLD
        assert gc.get_freeze_count() > frozen_before
        # A cycle made while the view runs is garbage the collector still finds.
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        gone = weakref.ref(a)
        del a, b
        gc.collect()
        assert gone() is None
    finally:
        undo()
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
