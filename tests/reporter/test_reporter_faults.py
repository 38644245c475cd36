"""The reporter never raises into training: internal failures are counted, then it switches itself off."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import torch

import xfertop
import xfertop.reporter as reporter
from ring_test_tools import ranks, start_script, wait_until
from xfertop.reporter._clock import MAX_ERRORS, StepClock
from xfertop.reporter._identity import current_identity
from xfertop.reporter._ring_writer import RingDirError, RingWriter, open_private_dir
from xfertop.sources.jobs.source import JobsSource


def _boom(*args: object, **kwargs: object) -> None:
    raise RuntimeError("injected failure")


def test_a_broken_ring_is_counted_and_the_clock_switches_off(
    fresh_clock: StepClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    list(xfertop.watch(range(3)))  # starts the ring
    assert fresh_clock.writer is not None
    monkeypatch.setattr(fresh_clock.writer, "write_step", _boom)
    seen = list(xfertop.watch(range(50)))
    assert seen == list(range(50))
    assert fresh_clock.disabled and fresh_clock.errors == MAX_ERRORS
    assert "injected failure" in fresh_clock.last_error
    state = JobsSource(ring_dir=fresh_clock.writer.dir_path).sample_once()
    rank = state.jobs[0].ranks[0]
    assert rank.reporter_disabled and rank.reporter_errors == MAX_ERRORS


def test_to_device_still_copies_when_inspection_breaks(
    fresh_clock: StepClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch.Tensor, "is_pinned", _boom)
    batch = {"x": torch.ones(4, 2), "y": [torch.zeros(3), (torch.ones(1),)], "meta": "kept"}
    for _ in xfertop.watch(range(3)):
        moved = xfertop.to_device(batch, "meta")
        assert moved["x"].device.type == "meta" and moved["y"][1][0].device.type == "meta"
        assert moved["meta"] == "kept" and isinstance(moved["y"][1], tuple)
    assert fresh_clock.errors >= 3


def test_the_callers_own_copy_errors_propagate_unchanged(fresh_clock: StepClock) -> None:
    with pytest.raises(RuntimeError):
        xfertop.to_device(torch.ones(2), "not-a-device")
    with pytest.raises(ValueError, match="loader broke"):
        for _ in xfertop.watch(_failing_loader()):
            pass


def _failing_loader():  # type: ignore[no-untyped-def]
    yield 1
    raise ValueError("loader broke")


def test_a_failing_clock_never_raises_from_the_public_api(
    fresh_clock: StepClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("before_next", "after_next", "enter_step", "exit_step"):
        monkeypatch.setattr(fresh_clock, name, _boom)
    monkeypatch.setattr(fresh_clock.work, "copied", _boom)
    for _ in xfertop.watch(range(5)):
        xfertop.mark_copied()
        with xfertop.step():
            pass
    assert fresh_clock.errors > 0


def test_an_unusable_ring_dir_turns_the_clock_off_with_a_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    link = tmp_path / "rings"
    link.symlink_to(target)
    clock = StepClock(lambda: RingWriter(str(link), current_identity()))
    monkeypatch.setattr(reporter, "_clock", clock)
    assert list(xfertop.watch(range(4))) == [0, 1, 2, 3]
    assert clock.disabled
    assert "is a symbolic link; refusing to use it" in capsys.readouterr().err
    assert list(target.iterdir()) == []


def test_ring_dir_and_files_are_private(tmp_path: Path) -> None:
    ring_dir = tmp_path / "rings"
    writer = RingWriter(str(ring_dir), current_identity())
    assert stat.S_IMODE(os.lstat(ring_dir).st_mode) == 0o700
    assert stat.S_IMODE(os.lstat(writer.path).st_mode) == 0o600
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    os.chmod(loose, 0o755)
    os.close(open_private_dir(str(loose)))
    assert stat.S_IMODE(os.lstat(loose).st_mode) == 0o700


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to create a directory owned by another user")
def test_another_users_ring_dir_is_refused(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    os.chown(foreign, 12345, 12345)
    with pytest.raises(RingDirError, match="belongs to uid 12345, not to you"):
        open_private_dir(str(foreign))


FORKING_LOOP = """
import os, sys
import torch
from torch.utils.data import DataLoader, Dataset
import xfertop

class CopyingDataset(Dataset):
    # Misbehaving on purpose: workers call the reporter; they must not write to the parent's ring.
    def __len__(self):
        return 64
    def __getitem__(self, index):
        with xfertop.step():
            xfertop.to_device(torch.ones(2), "meta")
        return torch.ones(2)

loader = DataLoader(CopyingDataset(), batch_size=4, num_workers=2,
                    multiprocessing_context="fork")
for batch in xfertop.watch(loader):
    pass
pid = os.fork()
if pid == 0:  # a forked process with a loop of its own (a rank started with fork): its own ring
    for _ in xfertop.watch(range(100)):
        pass
    os._exit(0)
os.waitpid(pid, 0)
print(xfertop.reporter.status()["steps"], pid)
"""


def test_forked_workers_never_write(tmp_path: Path) -> None:
    rings = tmp_path / "rings"
    child = start_script(tmp_path, rings, FORKING_LOOP)
    stdout, stderr = child.communicate(timeout=120)
    assert child.returncode == 0, stderr
    parent_steps, forked_pid = (int(word) for word in stdout.split())
    assert parent_steps == 16
    seen = wait_until(lambda: ranks(JobsSource(ring_dir=str(rings))), 5, "the rings")
    steps_by_pid = {rank.pid: [s.step for s in rank.steps] for rank in seen}
    # The DataLoader workers called the reporter for every sample: no ring of theirs, no step in ours.
    assert steps_by_pid == {child.pid: list(range(16)), forked_pid: list(range(100))}


def test_a_spawned_dataloader_worker_gets_no_clock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A worker started with spawn or forkserver is no forked child, but it is a worker all the same.
    monkeypatch.setenv("XFERTOP_DIR", str(tmp_path / "rings"))
    monkeypatch.setattr(reporter, "_clock", None)
    monkeypatch.setattr(reporter, "_in_forked_child", False)
    monkeypatch.setattr(torch.utils.data, "get_worker_info", lambda: object())
    with xfertop.step():
        assert xfertop.to_device(torch.ones(2), "meta").device.type == "meta"
    assert reporter._clock is None and reporter.status()["ring_path"] is None


def test_a_process_of_its_own_that_cannot_ask_torch_about_workers_still_gets_a_clock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XFERTOP_DIR", str(tmp_path / "rings"))
    monkeypatch.setattr(reporter, "_clock", None)
    monkeypatch.setattr(reporter, "_in_forked_child", False)
    monkeypatch.setattr(torch.utils.data, "get_worker_info", _boom)
    assert list(xfertop.watch(range(3))) == [0, 1, 2]
    assert reporter.status()["steps"] == 3
    monkeypatch.setattr(reporter, "_clock", None)
    monkeypatch.setattr(reporter, "_in_forked_child", True)  # a forked child that cannot tell stays quiet
    assert list(xfertop.watch(range(3))) == [0, 1, 2] and reporter._clock is None
