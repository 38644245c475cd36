"""Finding a process's children: from /proc/<pid>/task/<tid>/children (real processes, one child forked
by a second thread), the fallback walk over every /proc/<pid>/stat (captured and hand-made trees), and the
raw /proc file reader."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from xfertop.sources.host import proc_placement
from xfertop.sources.host.proc_placement import (
    ChildFinder,
    children_by_parent,
    parse_stat,
    read_proc_file,
    task_children,
)

SYNTHETIC_PROC = Path(__file__).resolve().parents[1] / "fixtures" / "proc" / "synthetic_2s8g"
PROC = Path("/proc")

# A parent with two children: one started by its main thread, one by a second thread, which the kernel
# lists in that thread's children file only. Prints "<main child> <thread child> <thread's tid>".
PARENT = r"""
import subprocess, sys, threading
code = "import sys; print('ready', flush=True); sys.stdin.read()"
def start():
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    child.stdout.readline()
    return child
children, tids, started, done = [start()], [], threading.Event(), threading.Event()
def in_thread():
    tids.append(threading.get_native_id())
    children.append(start())
    started.set()
    done.wait()
thread = threading.Thread(target=in_thread)
thread.start()
started.wait()
print(children[0].pid, children[1].pid, tids[0], flush=True)
sys.stdin.read()
for child in children:
    child.stdin.close()
    child.wait()
done.set()
thread.join()
"""


@pytest.fixture
def parent() -> Iterator[tuple[int, int, int, int]]:
    """(parent pid, child of its main thread, child of its second thread, that thread's tid)."""
    process = subprocess.Popen(
        [sys.executable, "-c", PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    main_child, thread_child, tid = map(int, process.stdout.readline().split())
    yield process.pid, main_child, thread_child, tid
    assert process.stdin is not None
    process.stdin.close()
    process.wait(timeout=30)


def _has_children_files() -> bool:
    return Path(f"/proc/self/task/{os.getpid()}/children").exists()


needs_children_files = pytest.mark.skipif(
    not _has_children_files(), reason="kernel built without CONFIG_PROC_CHILDREN"
)


@needs_children_files
def test_children_files_list_the_children_of_every_thread(parent) -> None:
    pid, main_child, thread_child, tid = parent
    assert Path(f"/proc/{pid}/task/{tid}/children").read_text().split() == [str(thread_child)]
    assert task_children(PROC, pid) == sorted([main_child, thread_child])
    assert task_children(PROC, pid) == children_by_parent(PROC)[pid]
    assert task_children(PROC, main_child) == []


@needs_children_files
def test_the_finder_reads_children_files_and_never_walks_on_this_machine(parent) -> None:
    pid, main_child, thread_child, _ = parent
    finder = ChildFinder(PROC)
    assert finder.children(pid) == sorted([main_child, thread_child])
    assert finder.children(main_child) == []
    assert not finder.walked


def test_a_process_that_exited_has_no_children() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert task_children(PROC, gone.pid) == []
    assert ChildFinder(PROC).children(gone.pid) == []


def test_a_captured_tree_without_children_files_falls_back_to_the_stat_walk() -> None:
    assert task_children(SYNTHETIC_PROC, 4101) is None
    finder = ChildFinder(SYNTHETIC_PROC)
    assert finder.children(4101) == [4201, 4202, 4203, 4204]
    assert finder.walked
    assert finder.children(4100) == [4101, 4104]
    assert finder.children(4104) == list(range(4301, 4309))
    assert finder.children(4201) == []


def _fake_process(
    root: Path,
    pid: int,
    ppid: int,
    comm: str = "python",
    tids: tuple[int, ...] = (),
    children: dict[int, str] | None = None,
) -> None:
    """A /proc/<pid> with a stat line and task/<tid>/ directories, with children files where given."""
    directory = root / str(pid)
    (directory / "task").mkdir(parents=True)
    (directory / "stat").write_text(f"{pid} ({comm}) S {ppid} 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100\n")
    for tid in tids or (pid,):
        (directory / "task" / str(tid)).mkdir()
        if children is not None and tid in children:
            (directory / "task" / str(tid) / "children").write_text(children[tid])


def test_children_files_union_and_a_vanished_thread_is_skipped(tmp_path: Path) -> None:
    _fake_process(tmp_path, 10, 1, tids=(10, 11), children={10: "21 20 ", 11: "22 "})
    # A thread that exited between listing and reading: its entry is there, its directory is not.
    (tmp_path / "10" / "task" / "12").symlink_to(tmp_path / "nowhere")
    assert task_children(tmp_path, 10) == [20, 21, 22]


def test_one_thread_without_a_children_file_means_the_kernel_has_none(tmp_path: Path) -> None:
    _fake_process(tmp_path, 10, 1, tids=(10, 11), children={10: "20 "})
    _fake_process(tmp_path, 20, 10)
    _fake_process(tmp_path, 30, 10)  # only the stat walk sees this one
    assert task_children(tmp_path, 10) is None
    finder = ChildFinder(tmp_path)
    assert finder.children(10) == [20, 30] and finder.walked


def test_too_many_threads_fall_back_to_the_walk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_process(tmp_path, 10, 1, tids=(10, 11), children={10: "20 ", 11: ""})
    _fake_process(tmp_path, 20, 10)
    assert task_children(tmp_path, 10) == [20]
    monkeypatch.setattr(proc_placement, "MAX_THREADS_FOR_CHILDREN", 1)
    assert task_children(tmp_path, 10) is None
    assert ChildFinder(tmp_path).children(10) == [20]


def test_the_walk_reads_odd_names_and_skips_what_is_not_a_stat_line(tmp_path: Path) -> None:
    _fake_process(tmp_path, 10, 1)
    _fake_process(tmp_path, 20, 10, comm="a) (b c) 7")  # a name with spaces and parentheses
    _fake_process(tmp_path, 21, 10, comm="caf\u00e9")
    (tmp_path / "22").mkdir()
    (tmp_path / "22" / "stat").write_text("22 no parentheses 10\n")
    (tmp_path / "23").mkdir()  # no stat at all: exited meanwhile
    (tmp_path / "self").mkdir()
    assert children_by_parent(tmp_path) == {1: [10], 10: [20, 21]}
    assert parse_stat((tmp_path / "20" / "stat").read_text()).comm == "a) (b c) 7"  # type: ignore[union-attr]


def test_the_fast_walk_agrees_with_parse_stat_on_the_captured_tree(tmp_path: Path) -> None:
    expected: dict[int, list[int]] = {}
    for entry in sorted(SYNTHETIC_PROC.iterdir()):
        stat = parse_stat((entry / "stat").read_text())
        assert stat is not None
        expected.setdefault(stat.ppid, []).append(int(entry.name))
    assert children_by_parent(SYNTHETIC_PROC) == expected
    assert children_by_parent(tmp_path / "missing") == {}


def test_read_proc_file_reads_to_the_end_and_raises_like_open(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(bytes(range(256)) * 1000)  # 256,000 bytes: several reads
    assert read_proc_file(str(big)) == big.read_bytes()
    (tmp_path / "empty").write_bytes(b"")
    assert read_proc_file(str(tmp_path / "empty")) == b""
    maps = read_proc_file(f"/proc/{os.getpid()}/maps")  # a seq_file, handed out a page at a time
    assert len(maps) > 4096 and maps.endswith(b"\n") and b"python" in maps
    with pytest.raises(FileNotFoundError):
        read_proc_file(str(tmp_path / "missing"))
