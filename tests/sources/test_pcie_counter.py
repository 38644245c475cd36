"""A 32-bit byte counter that wraps every ~67 ms at Gen5 speed still adds up to every byte moved."""

from __future__ import annotations

import pytest

from xfertop.sources.gpu.pcie_counter import (
    COUNTER_MODULUS,
    CounterUnwrapper,
    link_wire_bytes_per_s,
    poll_interval_s,
    wrap_time_s,
)

GEN5_X16_WIRE = link_wire_bytes_per_s(5, 16)


def feed(unwrapper: CounterUnwrapper, start: int, bytes_per_s: float, times_s: list[float]) -> None:
    for t_s in times_s:
        unwrapper.add(int(start + bytes_per_s * t_s) % COUNTER_MODULUS, t_s)


def test_gen5_x16_wraps_in_about_67_ms_and_is_polled_three_times_per_wrap() -> None:
    assert GEN5_X16_WIRE == 64e9
    assert wrap_time_s(GEN5_X16_WIRE) == pytest.approx(0.0671, abs=1e-4)
    assert poll_interval_s(GEN5_X16_WIRE) == pytest.approx(0.0336, abs=1e-4)
    assert poll_interval_s(link_wire_bytes_per_s(6, 16)) == pytest.approx(0.0168, abs=1e-4)


def test_unknown_link_assumes_the_fastest_so_polling_is_never_too_slow() -> None:
    assert link_wire_bytes_per_s(None, None) == link_wire_bytes_per_s(6, 16)


def test_deltas_across_many_wraps_add_up_to_the_true_rate() -> None:
    unwrapper = CounterUnwrapper(GEN5_X16_WIRE)
    rate = 59.3e9  # one second of a pinned H2D loop on the wire wraps the counter ~14 times
    feed(unwrapper, COUNTER_MODULUS - 1000, rate, [i * 0.022 for i in range(46)])
    window = unwrapper.take()
    assert window.covered_s == pytest.approx(0.99)
    assert window.bytes_per_s() == pytest.approx(rate, rel=1e-6)
    assert window.dropped_intervals == 0


def test_take_starts_a_new_window() -> None:
    unwrapper = CounterUnwrapper(GEN5_X16_WIRE)
    feed(unwrapper, 0, 10e9, [0.0, 0.02, 0.04])
    assert unwrapper.take().counted_bytes == pytest.approx(0.4e9, abs=1)
    feed(unwrapper, 0, 10e9, [0.06])
    assert unwrapper.take().counted_bytes == pytest.approx(0.2e9, abs=1)
    assert unwrapper.take().bytes_per_s() is None  # nothing new: no rate rather than a zero


def test_a_counter_reset_drops_that_interval_instead_of_inventing_gigabytes() -> None:
    unwrapper = CounterUnwrapper(GEN5_X16_WIRE)
    unwrapper.add(800_000_000, 0.0)
    unwrapper.add(1_000_000_000, 0.02)  # 10 GB/s
    unwrapper.add(1_000, 0.04)  # driver reload: back near zero, mod 2**32 a delta of 3.3 GB in 20 ms
    unwrapper.add(200_001_000, 0.06)
    window = unwrapper.take()
    assert window.dropped_intervals == 1
    assert window.covered_s == pytest.approx(0.04)
    assert window.bytes_per_s() == pytest.approx(10e9)


def test_a_poll_later_than_the_wrap_time_is_not_covered() -> None:
    unwrapper = CounterUnwrapper(GEN5_X16_WIRE)
    feed(unwrapper, 0, 1e9, [0.0, 0.02, 0.12, 0.14])  # 100 ms gap: could hide a wrap
    window = unwrapper.take()
    assert window.dropped_intervals == 1
    assert window.covered_s == pytest.approx(0.04)
    assert window.bytes_per_s() == pytest.approx(1e9)


def test_a_repeated_timestamp_carries_no_time() -> None:
    unwrapper = CounterUnwrapper(GEN5_X16_WIRE)
    unwrapper.add(0, 1.0)
    unwrapper.add(5, 1.0)
    unwrapper.add(1_000_000, 1.01)
    window = unwrapper.take()
    assert (window.counted_bytes, window.covered_s) == (1_000_000, pytest.approx(0.01))


def test_forget_restarts_from_the_next_reading() -> None:
    unwrapper = CounterUnwrapper(GEN5_X16_WIRE)
    unwrapper.add(0, 0.0)
    unwrapper.forget()  # e.g. the field answered NOT_SUPPORTED once
    unwrapper.add(4_000_000_000, 0.5)
    unwrapper.add(4_000_100_000, 0.51)
    assert unwrapper.take().counted_bytes == 100_000
