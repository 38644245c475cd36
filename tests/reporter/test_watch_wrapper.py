"""watch() wraps a loader without changing how the loader behaves in the user's own code."""

from __future__ import annotations

import copy
from collections.abc import Iterator

import xfertop
from xfertop.reporter._clock import StepClock


def _numbers() -> Iterator[int]:
    yield from range(3)


def test_a_watched_loader_without_len_is_still_truthy(fresh_clock: StepClock) -> None:
    loader = _numbers()
    assert bool(loader)  # a generator has no len(): truthy, as every object
    watched = xfertop.watch(loader)
    assert bool(watched)
    iterator = iter(watched)
    assert bool(iterator)
    assert list(iterator) == [0, 1, 2]


def test_a_watched_loader_keeps_the_loaders_own_truth(fresh_clock: StepClock) -> None:
    assert not xfertop.watch([])
    assert xfertop.watch([1])


def test_a_watched_loader_can_be_copied(fresh_clock: StepClock) -> None:
    watched = xfertop.watch([1, 2])
    assert list(copy.copy(watched)) == [1, 2]
    assert list(copy.deepcopy(watched)) == [1, 2]
    iterator = iter(watched)
    assert list(copy.copy(iterator)) == [1, 2]


class _StrictAttributes:
    """A loader whose __getattr__ raises something other than AttributeError for unknown names."""

    def __iter__(self) -> Iterator[int]:
        return iter([1, 2])

    def __getattr__(self, name: str) -> object:
        raise KeyError(name)


def test_a_loader_with_a_strict_getattr_is_watched_without_an_error(fresh_clock: StepClock) -> None:
    assert list(xfertop.watch(_StrictAttributes())) == [1, 2]


class _CopiesItself:
    """A loader with copy hooks of its own (and, on Python 3.10, pickling ones): they are the loader's,
    not the watched wrapper's."""

    def __init__(self, items: list[int]) -> None:
        self.items = items

    def __iter__(self) -> Iterator[int]:
        return iter(self.items)

    def __deepcopy__(self, memo: dict[int, object]) -> _CopiesItself:
        return _CopiesItself(list(self.items))

    def __getstate__(self) -> dict[str, object]:
        return {"items": self.items}


def test_copying_a_watched_loader_gives_a_watched_loader(fresh_clock: StepClock) -> None:
    watched = xfertop.watch(_CopiesItself([1, 2]))
    copied = copy.copy(watched)
    assert type(copied) is type(watched) and list(copied) == [1, 2]
    assert type(copy.deepcopy(watched)) is type(watched)
