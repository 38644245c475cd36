"""No private name of ours lands on one of Textual's.

An app method ``_flush(self)`` sat on Textual's ``App._flush(self, stderr=False)``, which Textual calls on
every flush of stdout or stderr while the app runs: every print in the viewer raised TypeError. This
walks every App, Screen, Widget and Driver class of xfertop.ui: the ``_names`` it and its mixins define
(methods, class attributes, ``self._name = ...``) must not be defined by a Textual class it inherits from,
nor (for the DOM classes) by Textual's App, Screen or Widget, unless ``OVERRIDES`` gives the reason.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import pkgutil
import textwrap
from pathlib import Path

from textual.app import App
from textual.dom import DOMNode
from textual.driver import Driver
from textual.screen import Screen
from textual.widget import Widget

import xfertop.ui

#: Deliberate overrides of Textual's private names, each documented where it is made.
OVERRIDES = {
    (
        "QuietLinuxDriver",
        "_file",
    ): "ui/textual_compat.py: the writer thread's file, wrapped so that a dead terminal cannot kill "
    "the thread",
}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _is_textual(cls: type) -> bool:
    return cls.__module__.split(".")[0] == "textual"


@functools.cache
def defined_names(cls: type) -> frozenset[str]:
    """What the class's own source defines: methods, class attributes and ``self.x`` assignments."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):  # no source (built in): its dictionary says
        return frozenset(vars(cls))
    [class_def] = tree.body
    assert isinstance(class_def, ast.ClassDef)
    names: set[str] = set()
    for node in class_def.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    for node in ast.walk(class_def):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        ):
            names.add(node.attr)
    return frozenset(names)


@functools.cache
def _textual_names(cls: type) -> frozenset[str]:
    names: set[str] = set()
    for base in cls.__mro__:
        if _is_textual(base):
            names |= set(vars(base)) | defined_names(base)
    return frozenset(names)


_DOM_NAMES = _textual_names(App) | _textual_names(Screen) | _textual_names(Widget)


def shadowed_names(cls: type) -> set[tuple[str, str]]:
    """(our class, name) for each private name ``cls`` or one of its non-Textual bases defines that
    Textual defines too."""
    textual = _textual_names(cls) | (_DOM_NAMES if issubclass(cls, DOMNode) else frozenset())
    return {
        (base.__name__, name)
        for base in cls.__mro__
        if not _is_textual(base) and base.__module__ not in ("builtins", "typing", "abc")
        for name in defined_names(base)
        if _is_private(name) and name in textual
    }


def ui_classes() -> list[type]:
    """Every App, Screen, Widget and Driver class defined in xfertop.ui."""
    found = []
    for info in pkgutil.iter_modules(xfertop.ui.__path__):
        module = importlib.import_module(f"xfertop.ui.{info.name}")
        found += [
            value
            for value in vars(module).values()
            if inspect.isclass(value)
            and value.__module__ == module.__name__
            and issubclass(value, DOMNode | Driver)
        ]
    return found


def test_no_ui_class_defines_a_private_name_of_textuals_unless_it_says_why() -> None:
    classes = ui_classes()
    assert {"XfertopApp", "LineTable", "TextLines", "QuietLinuxDriver"} <= {c.__name__ for c in classes}
    shadowing = set().union(*(shadowed_names(cls) for cls in classes))
    assert shadowing - set(OVERRIDES) == set()
    assert set(OVERRIDES) - shadowing == set(), "an override is gone: drop it from OVERRIDES"


def test_the_walk_finds_a_method_on_textuals_name_in_a_mixin_too() -> None:
    class Flushing:
        def _flush(self) -> None:
            pass

    class Painting(Flushing, App):
        def _render(self) -> None:  # Widget._render: the app is a DOM node as widgets are
            pass

        def _paint_panes(self) -> None:
            self._dirty_panes: set[str] = set()

    assert shadowed_names(Painting) == {("Flushing", "_flush"), ("Painting", "_render")}


def test_only_textual_compat_imports_textuals_private_modules() -> None:
    """Everything but ui/textual_compat.py is built on Textual's public API: no ``textual._x`` or
    ``textual.widgets._x`` import anywhere else in xfertop."""
    import xfertop

    offenders = []
    for path in Path(xfertop.__file__).parent.rglob("*.py"):
        if path.name == "textual_compat.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            offenders += [
                f"{path.name}: {name}"
                for name in names
                if name.startswith("textual") and any(p.startswith("_") for p in name.split("."))
            ]
    assert offenders == []
