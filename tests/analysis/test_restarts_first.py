"""Workers restarted every epoch holding most of the wait, with steady waits between epoch starts too:
persistent_workers=True first, more workers only as "look again" (scenario j on the H200: 72% of the
wait in epoch starts, the rest of it 22% of the window's time)."""

from __future__ import annotations

import dataclasses

from analysis.test_evidence_advice import _advice, _epoch_steps, _starved, _verdict


def test_restarts_holding_most_of_the_wait_come_first_and_more_workers_waits() -> None:
    # Per epoch: 120 ms of wait at the start, 10 ms in each of the other 9 steps: 57% of the wait is in
    # restarts, and the steady waits are 22% of the window's time (over the 10% bar of "more workers").
    rank = dataclasses.replace(
        _starved(workers=4), steps=_epoch_steps(start_wait_ms=120.0, steady_wait_ms=10.0), device="cpu"
    )
    verdict = _verdict(rank)
    assert verdict.kind == "input-bound"
    advice = _advice(verdict)
    assert "set persistent_workers=True" in advice
    assert "Then look again: waits outside the epoch starts still take 22% of the window's time" in advice
    assert "Raise num_workers" not in advice


def test_restarts_holding_less_than_half_leave_the_more_workers_advice() -> None:
    # 120 ms at the start, 30 ms in the others: 31% of the wait in restarts (still the restart advice),
    # and steady waits of 45% of each step: more workers is advice of its own.
    rank = dataclasses.replace(
        _starved(workers=4), steps=_epoch_steps(start_wait_ms=120.0, steady_wait_ms=30.0), device="cpu"
    )
    advice = _advice(_verdict(rank))
    assert "set persistent_workers=True" in advice and "Raise num_workers above 4" in advice
