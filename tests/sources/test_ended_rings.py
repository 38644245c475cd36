"""Rings whose writer has ended: no descriptor held for them, their files removed by any xfertop process."""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from ring_test_tools import SRC_DIR, write_step
from xfertop import wire
from xfertop.reporter._identity import current_identity
from xfertop.reporter._ring_writer import RingWriter
from xfertop.sources.jobs.source import JobsSource

OWN_START_TICKS = wire.process_start_ticks()
HOUR_NS = 3600 * 10**9
#: The oldest heartbeat of this boot (CLOCK_MONOTONIC starts at boot): as long ago as the machine has been up.
LONG_AGO_NS = 1


def _template(tmp_path: Path, steps: int = 30) -> bytearray:
    """The bytes of a real ring written by this process: ``steps`` 10 ms steps ending now."""
    writer = RingWriter(str(tmp_path / "template"), current_identity())
    start_ns = time.perf_counter_ns() - steps * 10_000_000
    for step in range(steps):
        write_step(
            writer, step, start_ns + step * 10_000_000, 10_000_000, 1_000_000, 0, 1024, 8, wire.F_COPIED
        )
    content = bytearray(Path(writer.path).read_bytes())
    os.unlink(writer.path)
    return content


def _copy(template: bytearray, ring_dir: Path, start_ticks: int, heartbeat_ns: int, run_id: str) -> Path:
    """A ring of this pid with another start time (a process that ended) or ours (this live process)."""
    content = bytearray(template)
    words = memoryview(content).cast("q")
    words[wire.H_START_TICKS] = start_ticks
    words[wire.H_HEARTBEAT_NS] = heartbeat_ns
    encoded = run_id.encode()
    offset, _ = wire.STRINGS["run_id"]
    content[offset : offset + 4 + len(encoded)] = len(encoded).to_bytes(4, "little") + encoded
    words.release()
    ring_dir.mkdir(mode=0o700, exist_ok=True)
    path = ring_dir / f"pid{os.getpid()}-{start_ticks}.ring"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as ring:
        ring.write(content)
    return path


def _set_word(path: Path, index: int, value: int) -> None:
    with open(path, "r+b") as ring:
        ring.seek(index * 8)
        ring.write(value.to_bytes(8, "little", signed=True))


def _ended_ticks(count: int, first: int = 1) -> list[int]:
    return [ticks for ticks in range(first, first + count + 1) if ticks != OWN_START_TICKS][:count]


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_ended_rings_hold_no_descriptor_in_the_reader(tmp_path: Path) -> None:
    template = _template(tmp_path)
    now_ns = time.perf_counter_ns()
    counts = []
    for size, first in ((10, 1), (200, 100)):
        rings = tmp_path / f"rings{size}"
        for ticks in _ended_ticks(size, first):
            _copy(template, rings, ticks, now_ns, f"job{ticks}")
        source = JobsSource(ring_dir=str(rings))
        gc.collect()  # descriptors of earlier tests' garbage are closed now, not during the count
        before = _open_fds()
        state = source.sample_once()
        source.sample_once()
        counts.append(_open_fds() - before)
        shown = [rank.status for job in state.jobs for rank in job.ranks]
        assert shown and set(shown) == {"finished"}
        source.close()
    assert max(counts) <= 1, counts  # not one more descriptor per ring (before: two per ring)


def test_once_json_reads_live_rings_beside_hundreds_of_ended_ones_under_a_low_descriptor_limit(
    tmp_path: Path,
) -> None:
    template = _template(tmp_path)
    rings = tmp_path / "rings"
    now_ns = time.perf_counter_ns()
    ended_long_ago = [
        _copy(template, rings, ticks, LONG_AGO_NS, f"old{ticks}") for ticks in _ended_ticks(300)
    ]
    ended_just_now = [
        _copy(template, rings, ticks, now_ns, f"new{ticks}") for ticks in _ended_ticks(300, 400)
    ]
    live = []
    for index in range(8):  # this test process, alive throughout, as eight ranks of one job
        content = bytearray(template)
        words = memoryview(content).cast("q")
        words[wire.H_RANK], words[wire.H_WORLD_SIZE] = index, 8
        words.release()
        live.append(_copy(content, rings, OWN_START_TICKS, time.perf_counter_ns(), "live-job"))
        os.rename(live[-1], live[-1].with_name(f"rank{index}.ring"))
    limit = 96

    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    env = {**os.environ, "XFERTOP_DIR": str(rings), "PYTHONPATH": SRC_DIR}
    result = subprocess.run(
        [sys.executable, "-m", "xfertop", "--once", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        stdin=subprocess.DEVNULL,
        preexec_fn=low_limit,
    )
    assert result.returncode == 0, result.stderr
    assert "Too many open files" not in result.stdout + result.stderr
    jobs = json.loads(result.stdout)["jobs"]
    by_key = {job["job_key"]: job for job in jobs["items"]}
    live_ranks = by_key["run:live-job"]["ranks"]
    assert [rank["rank"] for rank in live_ranks] == list(range(8))
    assert {rank["status"] for rank in live_ranks} <= {"live", "stalled"}
    assert all(rank["steps_recorded"] == 30 for rank in live_ranks)
    finished = [key for key in by_key if key.startswith("run:new")]
    assert finished and all(by_key[key]["ranks"][0]["status"] == "finished" for key in finished)
    assert not any(key.startswith("run:old") for key in by_key)
    # The rings of processes that ended an hour ago are gone; the others are left for a late viewer.
    assert not any(path.exists() for path in ended_long_ago)
    assert all(path.exists() for path in ended_just_now)
    assert all(path.with_name(f"rank{index}.ring").exists() for index, path in enumerate(live))


def test_remove_ended_rings_removes_only_the_rings_of_writers_gone_for_the_grace_period(
    tmp_path: Path,
) -> None:
    from xfertop.sources.jobs.ring_reader import remove_ended_rings

    template = _template(tmp_path)
    rings = tmp_path / "rings"
    now_ns = time.perf_counter_ns()
    [old, other_old] = [
        _copy(template, rings, ticks, LONG_AGO_NS, f"old{ticks}") for ticks in _ended_ticks(2)
    ]
    [recent] = [_copy(template, rings, ticks, now_ns - 5 * 10**9, "recent") for ticks in _ended_ticks(1, 10)]
    alive = _copy(template, rings, OWN_START_TICKS, LONG_AGO_NS, "alive")  # stalled since boot, alive
    from_another_boot = _copy(template, rings, _ended_ticks(1, 20)[0], now_ns + HOUR_NS, "reboot")
    never_stepped = _copy(template, rings, _ended_ticks(1, 30)[0], 0, "never")  # its creation counts
    _set_word(never_stepped, wire.H_CREATED_UNIX_NS, time.time_ns() - HOUR_NS)
    new_never_stepped = _copy(template, rings, _ended_ticks(1, 40)[0], 0, "new-never")  # created just now
    not_a_ring = rings / "notes.txt"
    not_a_ring.write_text("kept")
    assert remove_ended_rings([str(rings)], grace_s=60.0, keep={str(other_old)}) == 3
    assert not old.exists() and not from_another_boot.exists() and not never_stepped.exists()
    assert sorted(path.name for path in rings.iterdir()) == sorted(
        path.name for path in (other_old, recent, alive, new_never_stepped, not_a_ring)
    )
    assert remove_ended_rings([str(rings)], grace_s=1.0) == 2  # other_old and recent
    assert sorted(path.name for path in rings.iterdir()) == sorted(
        path.name for path in (alive, new_never_stepped, not_a_ring)
    )


def test_remove_ended_rings_leaves_files_it_cannot_vouch_for(tmp_path: Path) -> None:
    from xfertop.sources.jobs.ring_reader import remove_ended_rings

    template = _template(tmp_path)
    rings = tmp_path / "rings"
    [garbage, future, link_target] = [
        _copy(template, rings, ticks, LONG_AGO_NS, f"x{ticks}") for ticks in _ended_ticks(3)
    ]
    garbage.write_bytes(b"not a ring" * 1000)
    _set_word(
        future, wire.H_VERSION, 99
    )  # a format this viewer does not know: its fields may mean other things
    outside = tmp_path / "outside"
    outside.mkdir()
    os.rename(link_target, outside / link_target.name)
    (rings / "link.ring").symlink_to(outside / link_target.name)
    assert remove_ended_rings([str(rings)], grace_s=1.0) == 0
    assert (outside / link_target.name).exists() and garbage.exists() and future.exists()


def test_a_late_viewer_still_sees_a_ring_that_ended_within_the_grace_period(tmp_path: Path) -> None:
    template = _template(tmp_path)
    rings = tmp_path / "rings"
    [ticks] = _ended_ticks(1)
    _copy(template, rings, ticks, time.perf_counter_ns() - 10 * 10**9, "recent")
    clock = [time.monotonic()]
    source = JobsSource(ring_dir=str(rings), finished_grace_s=30.0, monotonic=lambda: clock[0])
    [job] = source.sample_once().jobs
    assert job.ranks[0].status == "finished" and len(job.ranks[0].steps) == 30
    clock[0] += 25.0  # 35 s after its last step: the next clean-up removes it
    assert source.sample_once().jobs == ()
    assert list(rings.iterdir()) == []


def test_a_writer_seen_dying_is_kept_for_the_grace_period_even_after_a_long_stall(tmp_path: Path) -> None:
    writer_process = subprocess.Popen(["sleep", "600"])
    try:
        identity = dataclasses.replace(
            current_identity(),
            pid=writer_process.pid,
            start_ticks=wire.process_start_ticks(writer_process.pid),
        )
        writer = RingWriter(str(tmp_path / "rings"), identity)
        write_step(writer, 0, LONG_AGO_NS, 10_000_000, 0, 0, 0, 0, 0)  # stalled since boot
        clock = [time.monotonic()]
        source = JobsSource(
            ring_dir=str(tmp_path / "rings"), finished_grace_s=30.0, monotonic=lambda: clock[0]
        )
        assert source.sample_once().jobs[0].ranks[0].status == "stalled"
    finally:
        writer_process.kill()
        writer_process.wait()
    clock[0] += 10.0  # its last step is an hour old, but this viewer saw it die 10 s ago
    assert source.sample_once().jobs[0].ranks[0].status == "finished"
    assert os.path.exists(writer.path)
    clock[0] += 31.0  # 31 s after it was seen dying
    assert source.sample_once().jobs == ()
    assert not os.path.exists(writer.path)


def test_xfertop_run_removes_ended_rings_before_starting_the_job(tmp_path: Path) -> None:
    template = _template(tmp_path)
    rings = tmp_path / "rings"
    old = _copy(template, rings, _ended_ticks(1)[0], LONG_AGO_NS, "old")
    env = {**os.environ, "XFERTOP_DIR": str(rings), "PYTHONPATH": SRC_DIR}
    result = subprocess.run(
        [sys.executable, "-m", "xfertop", "run", "--", sys.executable, "-c", "pass"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    assert not old.exists()


def test_a_ring_first_read_after_its_writer_ended_still_names_its_device(tmp_path: Path) -> None:
    # Seen on the H200: a job that ran and ended before any viewer looked read device '' (its content is
    # read once, then the mapping is dropped: the device string went with it).
    writer = RingWriter(str(tmp_path / "template"), current_identity())
    write_step(writer, 0, time.perf_counter_ns(), 10_000_000, 1_000_000, 0, 1024, 8, wire.F_COPIED)
    writer.set_device("cuda:3")
    content = bytearray(Path(writer.path).read_bytes())
    os.unlink(writer.path)
    ended = _copy(content, tmp_path / "rings", OWN_START_TICKS + 1, time.monotonic_ns(), "")

    [job] = JobsSource(ring_dir=str(ended.parent)).sample_once().jobs
    [rank] = job.ranks
    assert (rank.status, rank.device) == ("finished", "cuda:3")
