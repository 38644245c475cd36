"""History.spark draws each chart incrementally; it must always equal chart.spark of the whole series."""

from __future__ import annotations

import random

from xfertop.ui import chart
from xfertop.ui.history import History


def test_incremental_sparks_equal_a_full_redraw() -> None:
    rng = random.Random(7)
    history = History(points=40)
    key = ("gpu", 0, "rx")
    for _ in range(600):
        for _ in range(rng.choice((0, 1, 1, 1, 2, 5, 30))):  # the app draws after one, several or many points
            history.add(key, rng.choice((None, 0.0, -1.0, rng.random() * 63e9, 63e9, 70e9, 1e-3)))
        width = rng.choice((0, 1, 16, 16, 16, 39, 40, 41, 70))
        scale = rng.choice((63e9, 63e9, 0.0, 100.0))
        assert history.spark(key, scale, width) == chart.spark(history.get(key), scale, width)


def test_a_series_never_added_to_is_blank() -> None:
    assert History().spark(("gpu", 3, "tx"), 63e9, 5) == "     "
