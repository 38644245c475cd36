"""The classifier's source-line lookup: full paths, paths inside a container's root, short names."""

from __future__ import annotations

import os
from pathlib import Path

from xfertop.sources.stacks.source_lines import line_reader


def script(directory: Path, name: str = "train.py") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text("import torch\nfor _ in range(3):\n    _ = loss.item()\n")
    return path


def test_a_full_path_is_read_even_when_the_process_is_gone(tmp_path: Path) -> None:
    path = script(tmp_path / "job")
    lookup = line_reader(999_999, proc_root=tmp_path / "proc")  # no /proc entry: the job has exited
    assert lookup(str(path), 3) == "    _ = loss.item()"
    assert lookup("train.py", 3) == ""  # a short name cannot be placed without the process


def test_a_full_path_inside_a_container_is_read_through_its_root(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    script(proc / "42" / "root" / "workspace")
    assert line_reader(42, proc_root=proc)("/workspace/train.py", 3) == "    _ = loss.item()"


def test_a_short_name_is_found_from_the_working_directory_or_the_script(tmp_path: Path) -> None:
    proc = tmp_path / "proc" / "42"
    proc.mkdir(parents=True)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    os.symlink(cwd, proc / "cwd")
    path = script(tmp_path / "scripts")
    (proc / "cmdline").write_bytes(b"python\0" + str(path).encode() + b"\0--steps\0" + b"3\0")
    lookup = line_reader(42, proc_root=tmp_path / "proc")
    assert lookup("train.py", 3) == "    _ = loss.item()"
    assert lookup("train.py", 0) == "" and lookup("<string>", 1) == ""
