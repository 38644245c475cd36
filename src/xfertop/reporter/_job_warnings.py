"""Warnings raised inside the job's own calls name the job's line, as they do without xfertop.

`xfertop run` (and ``xfertop.watch``) wrap torch functions in Python: copy timing's ``.to()``, the syncs'
``float()``/``.item()``, ``backward``, the DataLoader's iterator. A warning torch raises inside one of them
(``float(loss)`` of a loss that requires grad: session 34's user job) is attributed by Python to the
innermost Python frame, the wrapper's. Left so, the job's stderr would name xfertop's file and line, the
once-per-line registry would be xfertop's (two of the job's lines warning the same message would show it
once), and a filter on the job's module would miss it.

So warnings attributed to xfertop's own files are let through every time (an "always" filter: no registry
of xfertop's), and the show hook issues each again from the first frame outside xfertop and the warnings
module: the job's filters, registry, file and line decide, as without xfertop. Other warnings pass through
the hook untouched. Nothing runs unless a warning is raised.
"""

from __future__ import annotations

import os
import sys
import warnings
from types import FrameType
from typing import Any, TextIO

#: The xfertop package's folder: a frame whose code lives under it is xfertop's, not the job's.
_XFERTOP_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
#: The warnings module's own frames (``_showwarnmsg``; Python 3.14 keeps it in ``_py_warnings``).
_WARNINGS_MODULES = ("warnings", "_py_warnings")
_installed: list[Any] = []  # the show hook, once installed


def install() -> None:
    """Once a process: the filter and the show hook (see the module docstring)."""
    if _installed:
        return
    warnings.filterwarnings("always", module=r"xfertop(\.|\Z)")
    previous = warnings.showwarning

    def showwarning(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        frame = _job_frame() if filename.startswith(_XFERTOP_DIR) else None
        if frame is None:
            previous(message, category, filename, lineno, file, line)
            return
        job_globals = frame.f_globals
        warnings.warn_explicit(
            message,
            category,
            frame.f_code.co_filename,
            frame.f_lineno,
            job_globals.get("__name__", "<string>"),
            job_globals.setdefault("__warningregistry__", {}),
            job_globals,
        )

    warnings.showwarning = showwarning
    _installed.append(showwarning)


def _job_frame() -> FrameType | None:
    """The innermost frame that is neither xfertop's nor the warnings module's: the call the job made."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if not frame.f_code.co_filename.startswith(_XFERTOP_DIR) and (
            frame.f_globals.get("__name__") not in _WARNINGS_MODULES
        ):
            return frame
        frame = frame.f_back
    return None
