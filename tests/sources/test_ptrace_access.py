"""Permission problems are found before py-spy runs and explained as sentences with the fix.

The proc root is a directory the test lays out, so every ptrace_scope and ownership case can be
described on any machine; py-spy's messages are the ones it printed here (fixtures/pyspy/stderr).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pyspy_support import FIXTURES
from xfertop.sources.host.ptrace_access import Caller, attach_problem, explain_pyspy_failure, ptrace_scope

ME = Caller(euid=1000, has_cap_sys_ptrace=False, pid=100)
ROOT = Caller(euid=0, has_cap_sys_ptrace=True, pid=100)
TARGET = 4242


def fake_proc(tmp_path: Path, scope: int | None, owner_uid: int = 1000, parent_pid: int = 1) -> Path:
    proc = tmp_path / "proc"
    (proc / str(TARGET)).mkdir(parents=True)
    (proc / str(TARGET) / "status").write_text(
        f"Name:\tpython\nPPid:\t{parent_pid}\nUid:\t{owner_uid}\t{owner_uid}\t{owner_uid}\t{owner_uid}\n"
    )
    if scope is not None:
        (proc / "sys" / "kernel" / "yama").mkdir(parents=True)
        (proc / "sys" / "kernel" / "yama" / "ptrace_scope").write_text(f"{scope}\n")
    return proc


def stderr_sample(name: str) -> str:
    return (FIXTURES / "stderr" / f"{name}.txt").read_text()


def test_no_yama_or_scope_zero_lets_a_user_attach_to_their_own_process(tmp_path: Path) -> None:
    assert attach_problem(TARGET, ME, fake_proc(tmp_path / "a", None)) is None
    assert attach_problem(TARGET, ME, fake_proc(tmp_path / "b", 0)) is None
    assert ptrace_scope(fake_proc(tmp_path / "c", 2)) == 2


def test_scope_one_explains_sysctl_xfertop_run_and_root(tmp_path: Path) -> None:
    reason = attach_problem(TARGET, ME, fake_proc(tmp_path, 1))
    assert reason is not None
    assert reason.startswith("ptrace_scope is 1")
    assert "sudo sysctl kernel.yama.ptrace_scope=0" in reason
    assert "xfertop run" in reason and f"sudo xfertop attach {TARGET}" in reason


def test_scope_one_still_allows_our_own_children_and_root(tmp_path: Path) -> None:
    assert attach_problem(TARGET, ME, fake_proc(tmp_path / "child", 1, parent_pid=ME.pid)) is None
    assert attach_problem(TARGET, ROOT, fake_proc(tmp_path / "root", 1)) is None


def test_scope_two_needs_root(tmp_path: Path) -> None:
    reason = attach_problem(TARGET, ME, fake_proc(tmp_path, 2))
    assert reason is not None and reason.startswith("ptrace_scope is 2") and "sudo xfertop attach" in reason
    assert attach_problem(TARGET, ROOT, fake_proc(tmp_path / "root", 2)) is None


def test_scope_three_forbids_everyone_and_points_at_xfertop_run(tmp_path: Path) -> None:
    reason = attach_problem(TARGET, ROOT, fake_proc(tmp_path, 3))
    assert reason is not None and reason.startswith("ptrace_scope is 3") and "xfertop run" in reason


def test_another_users_process_is_refused_without_cap_sys_ptrace(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, 0, owner_uid=2000)
    reason = attach_problem(TARGET, ME, proc)
    assert reason is not None and "uid 2000" in reason and "as root" in reason
    assert attach_problem(TARGET, ROOT, proc) is None


def test_a_process_that_is_gone_is_named(tmp_path: Path) -> None:
    reason = attach_problem(999_999, ME, fake_proc(tmp_path, 0))
    assert reason is not None and reason.startswith("process 999999 is not running")


@pytest.mark.parametrize(
    ("sample", "expected"),
    [
        ("process_gone", "is not running"),
        ("not_python", "not a Python process"),
    ],
)
def test_pyspy_failures_are_explained(tmp_path: Path, sample: str, expected: str) -> None:
    proc = fake_proc(tmp_path, 0)
    pid = TARGET if sample == "not_python" else 999_999
    assert expected in explain_pyspy_failure(pid, stderr_sample(sample), proc, ME)


def test_pyspys_permission_denied_is_explained_from_the_proc_view(tmp_path: Path) -> None:
    denied = stderr_sample("other_user")
    assert "Permission Denied" in denied
    scoped = explain_pyspy_failure(TARGET, denied, fake_proc(tmp_path / "scoped", 1), ME)
    assert scoped.startswith("ptrace_scope is 1")
    foreign = explain_pyspy_failure(TARGET, denied, fake_proc(tmp_path / "foreign", 0, owner_uid=2000), ME)
    assert "uid 2000" in foreign


def test_permission_denied_in_a_container_suggests_the_sys_ptrace_capability(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, 0)
    (proc / "1").mkdir()
    (proc / "1" / "cgroup").write_text("0::/kubepods/besteffort/pod1234/abcd\n")
    reason = explain_pyspy_failure(TARGET, stderr_sample("other_user"), proc, ME)
    assert "SYS_PTRACE" in reason and "xfertop run" in reason


def test_a_zombie_is_said_to_have_exited_not_to_be_no_python_process() -> None:
    # A real child that exited and was not waited for: /proc still lists it (state Z), and py-spy says
    # it finds no Python in it.
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, left unreaped: a zombie
        message = explain_pyspy_failure(child.pid, "Error: Failed to find python version from target process")
        assert message == (
            f"process {child.pid} has exited (its parent has not reaped it yet): nothing left to sample."
        )
    finally:
        child.wait()
