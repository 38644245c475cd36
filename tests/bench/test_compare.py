"""--compare: what moved since an earlier run, and whether the two runs are like for like."""

from __future__ import annotations

import dataclasses

from xfertop.bench.compare import compare, render_comparison

from .builders import H200_MACHINE, h200_cases, make_run


def test_same_conditions_and_noise_only() -> None:
    cmp = compare(make_run(), make_run(h200_cases(h2d=55.8)))
    assert cmp.same_conditions
    assert not [f for f in cmp.figures if f.changed]
    assert "no figure moved beyond its spread" in render_comparison(cmp)


def test_a_drop_in_pinned_h2d_is_shown_with_the_verdict_change() -> None:
    cmp = compare(make_run(), make_run(h200_cases(h2d=45.0)))
    moved = [f for f in cmp.figures if f.changed]
    assert [(f.case, f.label) for f in moved] == [("pinned_nb", "pinned H2D non_blocking")]
    text = render_comparison(cmp)
    assert "pinned_nb / pinned H2D non_blocking 256 MiB: 55 -> 45 GB/s (-18.2%)" in text
    assert "pinned H2D 256 MiB: pass -> fail" in text and "overall: pass -> fail" in text


def test_different_conditions_are_said_first() -> None:
    newer_driver = dataclasses.replace(H200_MACHINE, driver_version="590.10")
    text = render_comparison(compare(make_run(), make_run(machine=newer_driver)))
    assert text.splitlines()[:2] == [
        "CONDITIONS DIFFER, so figures are not like for like:",
        "  driver: 580.159.04 -> 590.10",
    ]
