"""Source lines of a sampled process, for the classifier's ``.to()`` / ``.item()`` check.

py-spy shortens file names (``train.py``, ``torch/utils/data/dataloader.py``), so a name is tried as
given, then against the target's working directory and the directories of the scripts on its command
line. Reads go through linecache, so each file is read once.
"""

from __future__ import annotations

import contextlib
import linecache
import os
from collections.abc import Callable
from pathlib import Path


def line_reader(pid: int, proc_root: Path = Path("/proc")) -> Callable[[str, int], str]:
    """A ``(filename, line) -> text`` lookup for ``pid``'s files ("" when the file cannot be found)."""
    roots = _search_roots(pid, proc_root)
    resolved: dict[str, str | None] = {}

    def lookup(filename: str, line: int) -> str:
        if line <= 0 or not filename or filename.startswith("<"):
            return ""
        if filename not in resolved:
            resolved[filename] = _resolve(filename, roots)
        path = resolved[filename]
        return linecache.getline(path, line).strip() if path else ""

    return lookup


def _search_roots(pid: int, proc_root: Path) -> list[Path]:
    roots: list[Path] = []
    with contextlib.suppress(OSError):
        roots.append(Path(os.readlink(proc_root / str(pid) / "cwd")))
    try:
        argv = (proc_root / str(pid) / "cmdline").read_bytes().split(b"\0")
    except OSError:
        argv = []
    for arg in argv:
        text = arg.decode(errors="replace")
        if text.endswith(".py"):
            script = Path(text) if Path(text).is_absolute() or not roots else roots[0] / text
            roots.append(script.parent)
    return roots


def _resolve(filename: str, roots: list[Path]) -> str | None:
    candidate = Path(filename)
    if candidate.is_absolute():
        return filename if candidate.is_file() else None
    for root in roots:
        if (root / candidate).is_file():
            return str(root / candidate)
    return None
