"""Source lines of a sampled process, for the classifier's ``.to()`` / ``.item()`` check.

Record windows are taken with ``--full-filenames``, so a name is usually absolute: it is read as given,
else inside the target's root (``/proc/PID/root``: a job in a container). py-spy's short names
(``train.py``, ``torch/utils/data/dataloader.py``: older captures, ``record`` without the flag) are
resolved against the target's working directory and the directories of the scripts on its command
line, which only exist while the process runs: call ``line_reader`` while it does. Reads go through
linecache, so each file is read once.
"""

from __future__ import annotations

import contextlib
import linecache
import os
from collections.abc import Callable
from pathlib import Path


def line_reader(pid: int, proc_root: Path = Path("/proc")) -> Callable[[str, int], str]:
    """A ``(filename, line) -> text`` lookup for ``pid``'s files ("" when the file cannot be found). The
    text keeps its indentation (the loop-body rule reads it), without the line's end."""
    roots = _search_roots(pid, proc_root)
    target_root = proc_root / str(pid) / "root"
    resolved: dict[str, str | None] = {}

    def lookup(filename: str, line: int) -> str:
        if line <= 0 or not filename or filename.startswith("<"):
            return ""
        if filename not in resolved:
            resolved[filename] = _resolve(filename, roots, target_root)
        path = resolved[filename]
        return linecache.getline(path, line).rstrip("\r\n") if path else ""

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


def _resolve(filename: str, roots: list[Path], target_root: Path) -> str | None:
    candidate = Path(filename)
    if candidate.is_absolute():
        if candidate.is_file():
            return filename
        inside = target_root / candidate.relative_to(candidate.anchor)
        with contextlib.suppress(OSError):
            if inside.is_file():
                return str(inside)
        return None
    for root in roots:
        if (root / candidate).is_file():
            return str(root / candidate)
    return None
