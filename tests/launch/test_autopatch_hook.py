"""The one-name import hook of `xfertop run` finds the module wherever the job's import system would."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType

import pytest

from xfertop.launch.autopatch import AfterImport

NAME = "xfertop_test_module_from_a_meta_path_finder"


class _SourceFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Provides one module from memory, as an editable install's finder (after PathFinder) does."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        return importlib.util.spec_from_loader(fullname, self) if fullname == NAME else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        module.answer = 42  # type: ignore[attr-defined]


def test_the_hook_runs_for_a_module_only_a_later_finder_provides(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[ModuleType] = []
    monkeypatch.setattr(sys, "meta_path", [AfterImport(NAME, seen.append), *sys.meta_path, _SourceFinder()])
    monkeypatch.delitem(sys.modules, NAME, raising=False)
    module = importlib.import_module(NAME)
    assert module.answer == 42 and seen == [module]
    monkeypatch.delitem(sys.modules, NAME)
