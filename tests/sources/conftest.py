"""Fixtures shared by the source tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from xfertop.sources.gpu.source import GpuSource


@pytest.fixture
def sources() -> Iterator[list[GpuSource]]:
    """GPU sources a test built (append them): each is stopped after the test."""
    made: list[GpuSource] = []
    yield made
    for source in made:
        source.stop()
