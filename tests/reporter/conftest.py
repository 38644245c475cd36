"""A fresh step clock per test, writing its ring under the test's tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

import xfertop.reporter as reporter
from xfertop.reporter._clock import StepClock
from xfertop.reporter._identity import current_identity
from xfertop.reporter._ring_writer import RingWriter


@pytest.fixture
def fresh_clock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> StepClock:
    ring_dir = tmp_path / "rings"
    clock = StepClock(lambda: RingWriter(str(ring_dir), current_identity()))
    monkeypatch.setattr(reporter, "_clock", clock)
    return clock


@pytest.fixture(autouse=True)
def torch_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """watch() in this process must not wrap the test session's own torch (Tensor.to, .item, a global
    forward hook) for every later test: its instrumentation is tested in child processes
    (test_watch_parts.py, test_step_clock_accuracy.py), and here it counts as done already."""
    monkeypatch.setattr(reporter, "_watch_instrumented", True)
