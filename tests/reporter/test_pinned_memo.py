"""Pinned or pageable is asked of the driver once per host buffer a second, not at every copy.

``Tensor.is_pinned()`` is the CUDA boundary here (a CPU build has no pinned memory), so it is the one
thing faked: it answers as the driver would and counts the questions.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import torch

import xfertop
from ring_test_tools import ranks
from xfertop.reporter._clock import StepClock
from xfertop.reporter._copy import PinnedMemo
from xfertop.sources.jobs.source import JobsSource

# The module, not the reporter's ``_clock`` attribute (the process's clock) that shadows it.
clock_module = importlib.import_module("xfertop.reporter._clock")


class _HostBuffer:
    """A host tensor as the memo sees it: an address, and the driver's answer for it."""

    def __init__(self, address: int, pinned: bool, asked: list[int]) -> None:
        self.address, self._pinned, self._asked = address, pinned, asked

    def data_ptr(self) -> int:
        return self.address

    def is_pinned(self) -> bool:
        self._asked.append(self.address)
        return self._pinned


def test_the_memo_asks_once_per_address_until_cleared() -> None:
    asked: list[int] = []
    memo = PinnedMemo()
    pinned, pageable = _HostBuffer(0x1000, True, asked), _HostBuffer(0x2000, False, asked)
    answers = [memo.pinned(buffer) for _ in range(5) for buffer in (pinned, pageable)]
    assert answers == [True, False] * 5
    assert asked == [0x1000, 0x2000]
    memo.clear()  # the address may have changed hands: asked again
    reused = _HostBuffer(0x1000, False, asked)
    assert memo.pinned(reused) is False
    assert asked == [0x1000, 0x2000, 0x1000]


def test_a_tensor_without_storage_is_asked_directly() -> None:
    class _Traced(_HostBuffer):  # a fake tensor while torch.compile traces: no data pointer
        def data_ptr(self) -> int:
            raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    asked: list[int] = []
    memo = PinnedMemo()
    assert [memo.pinned(_Traced(0, True, asked)) for _ in range(3)] == [True] * 3
    assert len(asked) == 3


def test_the_memo_stays_bounded_for_ever_new_addresses() -> None:
    asked: list[int] = []
    memo = PinnedMemo()
    for address in range(3 * PinnedMemo.LIMIT):
        assert memo.pinned(_HostBuffer(address, address % 2 == 0, asked)) is (address % 2 == 0)
    assert len(asked) == 3 * PinnedMemo.LIMIT
    assert memo.pinned(_HostBuffer(3 * PinnedMemo.LIMIT - 1, False, asked)) is False  # the latest stay known
    assert len(asked) == 3 * PinnedMemo.LIMIT


def test_a_loop_copying_one_pinned_buffer_asks_the_driver_once_and_reads_pinned(
    fresh_clock: StepClock, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    asked: list[int] = []

    def driver_says_pinned(tensor: torch.Tensor) -> bool:
        asked.append(tensor.data_ptr())
        return True

    monkeypatch.setattr(torch.Tensor, "is_pinned", driver_says_pinned)
    # The clock's tick, which clears the memo, runs at its first step and then not again within this test
    # (a slow machine must not make it tick mid-loop).
    monkeypatch.setattr(clock_module, "TICK_NS", 3600 * 10**9)
    batch = {"x": torch.ones(64, 8), "y": torch.zeros(64, dtype=torch.long)}
    for _ in xfertop.watch(range(30)):
        xfertop.to_device(batch, "meta")
    # 30 steps of two copies: each buffer asked in the first step and once after the tick, not 60 times.
    assert sorted(asked) == sorted([batch["x"].data_ptr(), batch["y"].data_ptr()] * 2)
    (rank,) = ranks(JobsSource(ring_dir=tmp_path / "rings"))
    copied = [step for step in rank.steps if step.copied]
    assert len(copied) >= 25 and all(step.pinned for step in copied)
    assert all(step.h2d_bytes == 64 * 8 * 4 + 64 * 8 for step in copied)
