"""Where rings may live: XDG_RUNTIME_DIR only when it is private and ours, and no directory on the way to the
ring directory that someone else could swap (a foreign symbolic link, another user's or an open directory)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from xfertop import wire
from xfertop.reporter._identity import current_identity
from xfertop.reporter._ring_writer import RingDirError, RingWriter, open_private_dir
from xfertop.sources.jobs.source import JobsSource

FALLBACK = f"/tmp/xfertop-{os.getuid()}"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another user (chown)")
OTHER_UID = 12345


def _runtime_dir(tmp_path: Path, mode: int = 0o700) -> Path:
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    os.chmod(runtime, mode)
    return runtime


def test_a_private_xdg_runtime_dir_of_ours_is_used(tmp_path: Path) -> None:
    runtime = _runtime_dir(tmp_path)
    assert wire.ring_dir_path({"XDG_RUNTIME_DIR": str(runtime)}) == str(runtime / "xfertop")


def test_a_missing_xdg_runtime_dir_is_not_used_and_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "run-user-1000"
    assert wire.ring_dir_path({"XDG_RUNTIME_DIR": str(missing)}) == FALLBACK
    assert not missing.exists()


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o1777], ids=["open", "group-writable", "sticky-open"])
def test_an_xdg_runtime_dir_others_can_write_to_is_not_used(tmp_path: Path, mode: int) -> None:
    runtime = _runtime_dir(tmp_path, mode)
    assert wire.ring_dir_path({"XDG_RUNTIME_DIR": str(runtime)}) == FALLBACK


def test_an_xdg_runtime_dir_that_is_a_symbolic_link_or_a_file_is_not_used(tmp_path: Path) -> None:
    runtime = _runtime_dir(tmp_path)
    (tmp_path / "link").symlink_to(runtime)
    (tmp_path / "file").write_text("")
    assert wire.ring_dir_path({"XDG_RUNTIME_DIR": str(tmp_path / "link")}) == FALLBACK
    assert wire.ring_dir_path({"XDG_RUNTIME_DIR": str(tmp_path / "file")}) == FALLBACK
    assert wire.ring_dir_path({"XDG_RUNTIME_DIR": "relative/run"}) == FALLBACK


@needs_root
def test_another_users_xdg_runtime_dir_is_not_used(tmp_path: Path) -> None:
    # `sudo -E xfertop run ...`: root with the user's XDG_RUNTIME_DIR must not leave a root-owned
    # directory in it, which would then lock the user's own reporter out.
    runtime = _runtime_dir(tmp_path)
    os.chown(runtime, OTHER_UID, OTHER_UID)
    assert wire.ring_dir_path({"XDG_RUNTIME_DIR": str(runtime)}) == FALLBACK
    assert list(runtime.iterdir()) == []


def test_missing_parents_of_xfertop_dir_are_created_private(tmp_path: Path) -> None:
    ring_dir = tmp_path / "a" / "b" / "rings"
    os.close(open_private_dir(str(ring_dir)))
    for created in (tmp_path / "a", tmp_path / "a" / "b", ring_dir):
        assert stat.S_IMODE(os.lstat(created).st_mode) == 0o700, created


def _refusal(ring_dir: Path) -> str:
    with pytest.raises(RingDirError) as refused:
        os.close(open_private_dir(str(ring_dir)))
    message = str(refused.value)
    assert "\n" not in message and message.startswith(f"ring directory {ring_dir}")
    return message


def test_a_ring_directory_under_a_directory_anyone_can_write_to_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    message = _refusal(shared / "me" / "rings")
    assert f"{shared} on its path is writable by other users" in message and "XFERTOP_DIR" in message
    assert not (shared / "me").exists()  # nothing created below it
    (shared / "me" / "rings").mkdir(parents=True, mode=0o700)
    state = JobsSource(ring_dir=str(shared / "me" / "rings")).sample_once()
    assert state.jobs == () and state.error == message


def test_a_sticky_shared_directory_on_the_way_is_fine(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)  # as /tmp is: others may add entries, not rename or remove ours
    writer = RingWriter(str(shared / "rings"), current_identity())
    assert os.path.exists(writer.path)
    assert JobsSource(ring_dir=str(shared / "rings")).sample_once().error is None


def test_our_symbolic_link_on_the_way_is_followed_and_its_target_checked(tmp_path: Path) -> None:
    safe = tmp_path / "safe"
    safe.mkdir(mode=0o700)
    (tmp_path / "to-safe").symlink_to(safe)
    RingWriter(str(tmp_path / "to-safe" / "rings"), current_identity())
    assert [path.name for path in (safe / "rings").iterdir()]
    shared = tmp_path / "shared"
    (shared / "me").mkdir(parents=True)
    os.chmod(shared, 0o777)
    (tmp_path / "to-shared").symlink_to(shared / "me")
    assert f"{shared} on its path is writable by other users" in _refusal(tmp_path / "to-shared" / "rings")


@needs_root
def test_a_symbolic_link_of_another_user_on_the_way_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "theirs"
    target.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(target)
    os.lchown(link, OTHER_UID, OTHER_UID)
    message = _refusal(link / "rings")
    assert f"{link} on its path is a symbolic link owned by uid {OTHER_UID}" in message
    assert not (target / "rings").exists()


@needs_root
def test_a_directory_of_another_user_on_the_way_is_refused(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    (theirs / "rings").mkdir(parents=True, mode=0o700)
    os.chmod(theirs, 0o755)
    os.chown(theirs, OTHER_UID, OTHER_UID)
    message = _refusal(theirs / "rings")
    assert f"{theirs} on its path belongs to uid {OTHER_UID}" in message
    state = JobsSource(ring_dir=str(theirs / "rings")).sample_once()
    assert state.error == message


@needs_root
def test_a_directory_of_the_overflow_uid_on_the_way_is_fine(tmp_path: Path) -> None:
    # In a user namespace (a rootless container) the host's / and /tmp show as owned by the overflow uid.
    host_owned = tmp_path / "host-owned"
    (host_owned / "rings").mkdir(parents=True, mode=0o700)
    os.chmod(host_owned, 0o755)
    os.chown(host_owned, wire.overflow_uid(), wire.overflow_uid())
    wire.check_ring_dir(str(host_owned / "rings"))  # no refusal
    assert JobsSource(ring_dir=str(host_owned / "rings")).sample_once().error is None


def test_the_ring_directory_itself_is_still_checked(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    assert "is a symbolic link; refusing to use it" in _refusal(tmp_path / "link")
    (tmp_path / "file").write_text("")
    assert "is not a directory" in _refusal(tmp_path / "file")
