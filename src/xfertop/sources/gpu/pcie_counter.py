"""Turning a 32-bit cumulative PCIe byte counter into honest averages (pure logic, no NVML, no threads).

NVML field values 197/198 count TX/RX bytes since the driver loaded, in 32 bits: at Gen5 x16 speed
they wrap about every 67 ms. Read often enough that no interval can wrap and the deltas modulo 2**32
add up to every byte that crossed the link. An interval that was too long (a late poll) or whose
delta is impossible for the link (a reset) is not counted, and the coverage says so.
"""

from __future__ import annotations

from dataclasses import dataclass

COUNTER_MODULUS = 2**32

#: Transfer rate per lane by PCIe generation, in gigatransfers per second (one bit per transfer per lane).
GT_PER_S_BY_GEN = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}

#: Reads per wrap time. At 2 (Gen5 x16: every 34 ms) a poll may come one whole interval late and still
#: not wrap; a later one is dropped (not counted, coverage says so), never miscounted. On the H200
#: (docs/gpu-source.md) 3 costs a third more CPU for slack that on-time polls never use; 1.5 saves a
#: quarter of the reads but lowers coverage from 99.5% to 99.0% under a busy process. A read costs
#: 0.7-1.0 ms of CPU in the polling thread: on GPUs with GPM (Hopper or newer) no poller runs at all.
POLLS_PER_WRAP = 2

#: A delta above the link's raw rate by this factor cannot be traffic: the counter was reset.
RESET_MARGIN = 1.25


def link_wire_bytes_per_s(gen: int | None, width: int | None) -> float:
    """The raw signalling rate of a link, before line encoding: an upper bound on what the counter
    can count (NVML counts headers too, so the payload-only rate would be too low a bound).
    Unknown generation or width assumes the fastest (Gen6 x16): polling too often only costs CPU."""
    gt_per_s = GT_PER_S_BY_GEN.get(gen or 0, max(GT_PER_S_BY_GEN.values()))
    lanes = width if width else 16
    return gt_per_s * 1e9 * lanes / 8


def wrap_time_s(wire_bytes_per_s: float) -> float:
    """How long the counter takes to wrap with the link running flat out."""
    return COUNTER_MODULUS / wire_bytes_per_s


def poll_interval_s(wire_bytes_per_s: float) -> float:
    """How often to read the counter so that no interval can wrap (Gen5 x16: ~34 ms)."""
    return wrap_time_s(wire_bytes_per_s) / POLLS_PER_WRAP


@dataclass(frozen=True)
class CounterWindow:
    """What one counter measured since the last ``take()``."""

    counted_bytes: int
    #: Wall time that the counted intervals span.
    covered_s: float
    #: Intervals left out: too long to rule out a wrap, or a delta only a reset explains.
    dropped_intervals: int

    def bytes_per_s(self) -> float | None:
        return self.counted_bytes / self.covered_s if self.covered_s > 0 else None


class CounterUnwrapper:
    """Accumulates the bytes between successive readings of one wrapping counter."""

    def __init__(self, wire_bytes_per_s: float) -> None:
        self._max_interval_s = wrap_time_s(wire_bytes_per_s)
        self._max_bytes_per_s = wire_bytes_per_s * RESET_MARGIN
        self._last: tuple[int, float] | None = None
        self._counted_bytes = 0
        self._covered_s = 0.0
        self._dropped = 0

    def add(self, value: int, timestamp_s: float) -> None:
        """Feed one reading (counter value, when it was read)."""
        last, self._last = self._last, (value, timestamp_s)
        if last is None:
            return
        interval_s = timestamp_s - last[1]
        if interval_s <= 0:  # a repeated or out-of-order stamp carries no time
            self._last = last
            return
        delta_bytes = (value - last[0]) % COUNTER_MODULUS
        if interval_s >= self._max_interval_s or delta_bytes > self._max_bytes_per_s * interval_s:
            self._dropped += 1
            return
        self._counted_bytes += delta_bytes
        self._covered_s += interval_s

    def forget(self) -> None:
        """Start over from the next reading (after a gap in which readings were impossible)."""
        self._last = None

    def take(self) -> CounterWindow:
        """Return what was counted since the last take and start a new window."""
        window = CounterWindow(self._counted_bytes, self._covered_s, self._dropped)
        self._counted_bytes, self._covered_s, self._dropped = 0, 0.0, 0
        return window
