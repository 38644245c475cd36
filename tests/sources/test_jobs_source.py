"""The viewer's side of the wire: validation, grouping into jobs, liveness, history, problems."""

from __future__ import annotations

import dataclasses
import errno
import os
import time
from pathlib import Path

import pytest

from ring_test_tools import rank_with_steps, ranks, start_script, wait_until, write_step
from xfertop import wire
from xfertop.model.jobs import JobsState, StepRecord
from xfertop.reporter._identity import current_identity
from xfertop.reporter._ring_writer import RingWriter
from xfertop.sources.jobs.ring_reader import to_step_record
from xfertop.sources.jobs.source import JobsSource, job_key, job_name, process_alive


def _writer(ring_dir: Path, steps: int = 0, **identity_changes: object) -> RingWriter:
    """A ring whose ``steps`` 10 ms steps end now (the heartbeat of a writer that stepped until now)."""
    identity = dataclasses.replace(current_identity(), **identity_changes)  # type: ignore[arg-type]
    writer = RingWriter(str(ring_dir), identity)
    first_ns = time.perf_counter_ns() - steps * 10_000_000
    for step in range(steps):
        start_ns = first_ns + step * 10_000_000
        write_step(writer, step, start_ns, 10_000_000, 4_000_000, 0, 1024, 8, wire.F_COPIED)
    return writer


def _source(ring_dir: Path, **kwargs: float) -> JobsSource:
    return JobsSource(ring_dir=str(ring_dir), **kwargs)  # type: ignore[arg-type]


def test_a_late_viewer_sees_the_history_and_ranks_group_into_jobs(tmp_path: Path) -> None:
    for rank in (1, 0):
        _writer(tmp_path, steps=50, rank=rank, local_rank=rank, world_size=2, run_id="abc", pid=os.getpid())
    _writer(tmp_path, steps=3)
    state = _source(tmp_path).sample_once()
    assert state.problems == () and state.error is None
    by_key = {job.job_key: job for job in state.jobs}
    ddp = by_key["run:abc"]
    assert [r.rank for r in ddp.ranks] == [0, 1]
    assert [s.step for s in ddp.ranks[0].steps] == list(range(50))
    first = ddp.ranks[0].steps[0]
    assert (first.wall_ms, first.data_wait_ms, first.h2d_bytes, first.samples) == (10.0, 4.0, 1024, 8)
    assert first.gpu_gap_ms is None and not first.pinned  # no CUDA timing: the GPU gap is not measured
    assert len(by_key[f"pid:{os.getpid()}"].ranks) == 1


def test_the_gpu_gap_appears_when_patched_after_the_step_was_read(tmp_path: Path) -> None:
    writer = _writer(tmp_path)
    writer.write_step(0, 0, 10_000_000, 1_000_000, 0, 0, 0, wire.NO_VALUE, 0, 4, wire.F_GPU_PENDING, 0)
    source = _source(tmp_path)
    [step] = source.sample_once().jobs[0].ranks[0].steps
    assert step.gpu_gap_ms is None  # its events have not completed yet
    writer.patch_gpu(0, 2_500_000, wire.F_GPU_RESOLVED, wire.F_GPU_PENDING)
    [step] = source.sample_once().jobs[0].ranks[0].steps
    assert step.gpu_gap_ms == 2.5


def test_a_gap_of_zero_written_at_once_is_measured_and_a_dropped_one_is_not(tmp_path: Path) -> None:
    # The GPU still ran the step before at this step's first work: no events, a gap of 0 in the record.
    writer = _writer(tmp_path)
    writer.write_step(0, 0, 10_000_000, 1_000_000, 0, 0, 0, 0, 0, 4, 0, 0)
    writer.write_step(
        1, 10_000_000, 10_000_000, 1_000_000, 0, 0, 0, wire.NO_VALUE, 0, 4, wire.F_GPU_PENDING, 0
    )
    writer.patch_gpu(1, wire.NO_VALUE, wire.F_GPU_DROPPED, wire.F_GPU_PENDING)  # too many steps pending
    [busy, dropped] = _source(tmp_path).sample_once().jobs[0].ranks[0].steps
    assert busy.gpu_gap_ms == 0.0 and dropped.gpu_gap_ms is None


def _problems(ring_dir: Path) -> str:
    return "\n".join(_source(ring_dir).sample_once().problems)


def test_unknown_versions_are_reported_and_the_others_carry_on(tmp_path: Path) -> None:
    future = _writer(tmp_path, steps=2, pid=os.getpid())
    future.words[wire.H_VERSION] = 99
    _writer(tmp_path, steps=2, pid=os.getpid())
    state = _source(tmp_path).sample_once()
    assert len(state.jobs) == 1 and len(state.jobs[0].ranks) == 1
    [problem] = state.problems
    assert "version 99 is not known to this viewer" in problem and future.path in problem


def test_a_ring_of_the_first_format_is_reported_not_misread(tmp_path: Path) -> None:
    # Version 1 had 12-word records with GPU copy/compute/idle where version 2 has the loop's own work,
    # syncs and the GPU gap: read as version 2, its slots would land in the wrong fields.
    old = _writer(tmp_path, steps=2, pid=os.getpid())
    old.words[wire.H_VERSION] = 1
    old.words[wire.H_RECORD_BYTES] = 12 * 8
    state = _source(tmp_path).sample_once()
    assert state.jobs == ()
    [problem] = state.problems
    assert "version 1 is not known to this viewer" in problem and old.path in problem


def test_malformed_and_truncated_rings_are_skipped_with_a_reason(tmp_path: Path) -> None:
    (tmp_path / "garbage.ring").write_bytes(b"not a ring at all" * 400)
    (tmp_path / "short.ring").write_bytes(b"XFERTOP\x00" + bytes(100))
    cut = _writer(tmp_path, steps=5)
    os.truncate(cut.path, wire.HEADER_BYTES + 10 * wire.RECORD_BYTES)
    bad_capacity = _writer(tmp_path)
    bad_capacity.words[wire.H_CAPACITY] = 0
    text = _problems(tmp_path)
    assert "garbage.ring: not an xfertop ring (bad magic)" in text
    assert "short.ring: truncated: 108 bytes" in text
    assert f"{cut.path}: truncated" in text
    assert "capacity 0 is out of range" in text


def test_a_ring_claiming_another_uid_is_skipped(tmp_path: Path) -> None:
    _writer(tmp_path, steps=1, uid=os.getuid() + 1)
    assert f"header names uid {os.getuid() + 1}, not you" in _problems(tmp_path)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another user")
def test_a_ring_owned_by_another_user_is_skipped(tmp_path: Path) -> None:
    writer = _writer(tmp_path, steps=1)
    os.chown(writer.path, 12345, 12345)
    assert "belongs to uid 12345, not to you" in _problems(tmp_path)


def test_symlinked_rings_and_directories_are_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    writer = _writer(real, steps=1)
    rings = tmp_path / "rings"
    rings.mkdir(mode=0o700)
    (rings / "link.ring").symlink_to(writer.path)
    assert "link.ring is a symbolic link; skipped" in _problems(rings)
    linked_dir = tmp_path / "linked"
    linked_dir.symlink_to(real)
    state = _source(linked_dir).sample_once()
    assert state.jobs == ()
    assert state.error is not None and "is a symbolic link; refusing to use it" in state.error


def test_a_missing_ring_directory_means_no_jobs_yet(tmp_path: Path) -> None:
    state = _source(tmp_path / "nothing-here").sample_once()
    assert state.jobs == () and state.error is None and state.problems == ()


def test_a_half_written_header_is_not_a_problem_while_young(tmp_path: Path) -> None:
    writer = _writer(tmp_path, steps=1)
    writer.words[wire.H_MAGIC] = 0
    assert _source(tmp_path).sample_once().problems == ()


def test_liveness_live_stalled_and_finished(tmp_path: Path) -> None:
    writer = _writer(tmp_path)
    now_ns = time.perf_counter_ns()
    write_step(writer, 0, now_ns - 10_000_000, 10_000_000, 0, 0, 0, 0, 0)
    source = _source(tmp_path, stall_after_s=0.05)
    assert source.sample_once().jobs[0].ranks[0].status == "live"
    writer.words[wire.H_HEARTBEAT_NS] = now_ns - 1_000_000_000
    assert source.sample_once().jobs[0].ranks[0].status == "stalled"
    writer.close()
    assert source.sample_once().jobs[0].ranks[0].status == "finished"


def test_a_reused_pid_counts_as_finished_and_its_file_is_removed_after_grace(tmp_path: Path) -> None:
    now_s = [time.monotonic()]
    writer = _writer(tmp_path, steps=1, start_ticks=1)  # our pid, but another process's start time
    source = JobsSource(ring_dir=str(tmp_path), finished_grace_s=10.0, monotonic=lambda: now_s[0])
    assert source.sample_once().jobs[0].ranks[0].status == "finished"
    now_s[0] += 11.0
    assert source.sample_once().jobs == ()
    assert not os.path.exists(writer.path)


def test_a_ring_filling_faster_than_its_reads_keep_up_with_is_read_sooner(tmp_path: Path) -> None:
    """Read once a second, a ring of 1024 steps loses steps above 1024 steps/s: where a read finds more
    than half the ring newly written, the next read comes sooner; when the job slows, the interval is back."""
    now_s = [time.monotonic()]
    writer = _writer(tmp_path, steps=10)
    source = JobsSource(ring_dir=str(tmp_path), interval_s=1.0, monotonic=lambda: now_s[0])
    source.sample_once()
    assert source.next_interval_s() == 1.0, "a ring's first read (its history) tells no rate"
    capacity = writer.capacity
    start_ns = time.perf_counter_ns()

    def steps_in(seconds: float, count: int, first: int) -> None:
        now_s[0] += seconds
        for i in range(count):
            write_step(writer, first + i, start_ns + i * 1000, 1000, 0, 0, 0, 1, 0)

    steps_in(1.0, capacity * 3 // 4, first=10)  # 768 steps/s: 0.75 of the ring a read
    state = source.sample_once()
    assert state.jobs[0].ranks[0].steps[-1].step == 10 + capacity * 3 // 4 - 1
    assert source.next_interval_s() == pytest.approx(0.5 / 0.75, rel=0.01)
    steps_in(0.5, 100, first=10 + capacity * 3 // 4)  # 200 steps/s: the interval again
    source.sample_once()
    assert source.next_interval_s() == 1.0


def test_a_slot_left_half_written_by_a_dead_writer_does_not_block_the_rest(tmp_path: Path) -> None:
    writer = _writer(tmp_path, steps=5)
    writer.words[wire.slot_word(writer.capacity, 2) + wire.R_SEQ] |= 1  # died between odd and even
    source = _source(tmp_path)
    assert [s.step for s in source.sample_once().jobs[0].ranks[0].steps] == [0, 1]
    for _ in range(3):
        rank = source.sample_once().jobs[0].ranks[0]
    assert [s.step for s in rank.steps] == [0, 1, 3, 4] and rank.steps_lost == 1


def test_without_xfertop_dir_every_default_place_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("XFERTOP_DIR", raising=False)
    (tmp_path / "runtime").mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "runtime"))
    candidates = wire.ring_dir_candidates()
    assert candidates[0] == str(tmp_path / "runtime" / "xfertop")
    assert f"/tmp/xfertop-{os.getuid()}" in candidates
    assert wire.ring_dir_candidates({"XFERTOP_DIR": "/x"}) == ["/x"]
    source = JobsSource()
    source.ring_dirs = [str(tmp_path / "runtime" / "xfertop"), str(tmp_path / "from-cron")]
    _writer(tmp_path / "from-cron", steps=2)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "elsewhere")
    source.ring_dirs.append(str(tmp_path / "linked"))
    state = source.sample_once()
    assert len(state.jobs) == 1 and state.error is None
    assert state.ring_dir == str(tmp_path / "runtime" / "xfertop")
    assert any("is a symbolic link; refusing to use it" in p for p in state.problems)


def test_every_record_field_lands_in_its_step_record_field() -> None:
    body = [0] * wire.RECORD_WORDS
    values = {
        wire.R_STEP: 3,
        wire.R_START_NS: 11,
        wire.R_WALL_NS: 20_000_000,
        wire.R_DATA_WAIT_NS: 2_000_000,
        wire.R_COPY_CPU_NS: 1_000_000,
        wire.R_LOOP_PRE_NS: 3_000_000,
        wire.R_SYNC_NS: 4_000_000,
        wire.R_GPU_GAP_NS: 6_000_000,
        wire.R_H2D_BYTES: 77,
        wire.R_SAMPLES: 9,
        wire.R_FLAGS: wire.F_GPU_RESOLVED
        | wire.F_PAGEABLE_NON_BLOCKING
        | wire.F_COPIED
        | wire.F_EPOCH_START
        | wire.F_WORKERS_STARTED
        | wire.F_CHECKPOINT
        | wire.F_PARTITIONED
        | wire.F_SYNCED
        | wire.F_PROBE_REPLAY
        | wire.F_NESTED_PASS
        | wire.F_PERIODIC_TIMED
        | wire.loader_workers_flags(8),
        wire.R_LOOP_POST_NS: 5_000_000,
        wire.R_PERIODIC_GPU_NS: 7_000_000,
    }
    for word, value in values.items():
        body[word] = value
    record = to_step_record(body)
    assert record == StepRecord(
        step=3,
        wall_ms=20.0,
        data_wait_ms=2.0,
        copy_cpu_ms=1.0,
        loop_pre_ms=3.0,
        sync_ms=4.0,
        loop_post_ms=5.0,
        gpu_gap_ms=6.0,
        h2d_bytes=77,
        samples=9,
        pinned=False,
        pageable_non_blocking=True,
        start_monotonic_ns=11,
        copied=True,
        epoch_start=True,
        workers_started=True,
        checkpoint=True,
        partitioned=True,
        synced=True,
        probe_replay=True,
        loader_workers=8,
        nested_pass=True,
        periodic_gpu_ms=7.0,
    )
    assert record.model_ms == 20.0 - 2.0 - 3.0 - 1.0 - 4.0 - 5.0  # the model is what the parts leave
    body[wire.R_FLAGS] = wire.F_PINNED | wire.F_GPU_PENDING
    pending = to_step_record(body)
    assert pending.pinned and pending.gpu_gap_ms is None  # the gap word is not read before it resolves
    assert not (pending.partitioned or pending.synced or pending.copied or pending.checkpoint)
    assert pending.loader_workers is None  # no loader's workers said (rings written before they were)
    assert pending.periodic_gpu_ms is None  # word 13 is read only once the pass's time is patched in
    for workers, read in ((0, 0), (3, 3), (254, 254), (1_000, 254)):
        body[wire.R_FLAGS] = wire.F_PINNED | wire.loader_workers_flags(workers)
        assert (to_step_record(body).loader_workers, to_step_record(body).pinned) == (read, True)
    body[wire.R_FLAGS] = 0
    body[wire.R_GPU_GAP_NS] = wire.NO_VALUE
    assert to_step_record(body).gpu_gap_ms is None  # no CUDA timing
    body[wire.R_GPU_GAP_NS] = 0
    assert to_step_record(body).gpu_gap_ms == 0.0  # the GPU still had work queued: measured, no gap


def test_a_step_record_lands_in_the_ring_word_by_word(tmp_path: Path) -> None:
    writer = RingWriter(str(tmp_path), current_identity())
    writer.write_step(5, 100, 20, 2, 3, 4, 5, 6, 7, 8, 9, 10)
    base = wire.slot_word(writer.capacity, 5)
    words = [writer.words[base + offset] for offset in range(wire.RECORD_WORDS)]
    assert words[wire.R_SEQ] % 2 == 0 and words[wire.R_STEP] == 5
    named = (wire.R_START_NS, wire.R_WALL_NS, wire.R_DATA_WAIT_NS, wire.R_COPY_CPU_NS, wire.R_LOOP_PRE_NS)
    assert [words[offset] for offset in named] == [100, 20, 2, 3, 4]
    named = (wire.R_SYNC_NS, wire.R_GPU_GAP_NS, wire.R_H2D_BYTES, wire.R_SAMPLES, wire.R_FLAGS)
    assert [words[offset] for offset in named] == [5, 6, 7, 8, 9]
    assert words[wire.R_LOOP_POST_NS] == 10
    assert words[wire.R_LOOP_POST_NS + 1 :] == [0] * (wire.RECORD_WORDS - wire.R_LOOP_POST_NS - 1)  # reserved
    writer.patch_gpu(5, 44, wire.F_GPU_RESOLVED, 1)
    assert writer.words[base + wire.R_GPU_GAP_NS] == 44
    assert writer.words[base + wire.R_FLAGS] == (9 | wire.F_GPU_RESOLVED) & ~1
    assert writer.words[base + wire.R_LOOP_POST_NS] == 10  # a patch touches the gap and the flags only


def test_job_keys_and_names() -> None:
    header = wire.RingHeader(
        uid=0,
        pid=10,
        ppid=9,
        start_ticks=0,
        created_unix_ns=0,
        rank=0,
        local_rank=0,
        world_size=2,
        host="h",
        run_id="",
        master="n1:29500",
        device="",
        argv=("python", "train.py"),
        version=1,
        capacity=8,
    )
    assert job_key(header) == "master:n1:29500"
    assert job_key(dataclasses.replace(header, master="")) == "ppid:9"
    assert job_key(dataclasses.replace(header, master="", world_size=None)) == "pid:10"
    assert job_name(("/usr/bin/python3", "-u", "/x/train.py", "--lr", "1")) == "train.py"
    assert job_name(("python", "-m", "pkg.train")) == "-m pkg.train"


# -- what a read skips, and the answers that must not change because of it --------------------------------
def _settle(ring_dir: Path) -> None:
    """Date the directory's mtime a minute back: its listing is then reused until something changes it."""
    old_ns = time.time_ns() - 60_000_000_000
    os.utime(ring_dir, ns=(old_ns, old_ns))


def _paths(state: JobsState) -> list[str]:
    return sorted(rank.ring_path for job in state.jobs for rank in job.ranks)


def test_new_and_removed_rings_are_seen_on_the_next_read_of_a_settled_directory(tmp_path: Path) -> None:
    first = _writer(tmp_path, steps=1, pid=os.getpid())
    _settle(tmp_path)
    source = _source(tmp_path)
    assert _paths(source.sample_once()) == [first.path]
    assert _paths(source.sample_once()) == [first.path]
    second = _writer(tmp_path, steps=1, pid=os.getpid(), start_ticks=first._identity.start_ticks + 1)
    assert _paths(source.sample_once()) == sorted([first.path, second.path])
    _settle(tmp_path)
    source.sample_once()
    os.unlink(first.path)
    assert _paths(source.sample_once()) == [second.path]


def test_a_ring_created_in_the_same_mtime_tick_as_the_last_listing_is_found(tmp_path: Path) -> None:
    first = _writer(tmp_path, steps=1, pid=os.getpid())
    source = _source(tmp_path)
    source.sample_once()
    listed_mtime_ns = os.stat(tmp_path).st_mtime_ns
    second = _writer(tmp_path, steps=1, pid=os.getpid(), start_ticks=first._identity.start_ticks + 1)
    os.utime(tmp_path, ns=(listed_mtime_ns, listed_mtime_ns))  # a coarse clock stamps both the same
    assert _paths(source.sample_once()) == sorted([first.path, second.path])


def test_a_ring_replaced_under_the_same_name_is_read_again(tmp_path: Path) -> None:
    old = _writer(tmp_path, steps=3, pid=os.getpid())
    _settle(tmp_path)
    source = _source(tmp_path)
    for _ in range(2):
        [rank] = source.sample_once().jobs[0].ranks
        assert len(rank.steps) == 3
    new = _writer(tmp_path / "elsewhere", steps=7, pid=os.getpid(), start_ticks=old._identity.start_ticks)
    os.replace(new.path, old.path)
    [rank] = source.sample_once().jobs[0].ranks
    assert [s.step for s in rank.steps] == list(range(7))


def test_a_device_named_after_the_first_read_is_shown(tmp_path: Path) -> None:
    writer = _writer(tmp_path, steps=2, pid=os.getpid(), device="")
    source = _source(tmp_path)
    assert source.sample_once().jobs[0].ranks[0].device == ""
    writer.set_device("cuda:3")
    assert source.sample_once().jobs[0].ranks[0].device == "cuda:3"


def test_a_dead_writers_half_written_slot_is_skipped_and_its_later_steps_read(tmp_path: Path) -> None:
    writer = _writer(tmp_path, steps=5, start_ticks=1)  # our pid, another process's start time: dead
    writer.words[wire.slot_word(writer.capacity, 2) + wire.R_SEQ] |= 1
    source = _source(tmp_path)
    for _ in range(6):
        [rank] = source.sample_once().jobs[0].ranks
    assert [s.step for s in rank.steps] == [0, 1, 3, 4] and rank.steps_lost == 1
    assert rank.status == "finished"


def test_a_finished_ranks_heartbeat_age_keeps_growing(tmp_path: Path) -> None:
    writer = _writer(tmp_path, start_ticks=1)
    write_step(writer, 0, time.perf_counter_ns() - 1_000_000_000, 1_000_000, 0, 0, 0, 0, 0)
    source = _source(tmp_path)
    ages = [source.sample_once().jobs[0].ranks[0].heartbeat_age_s for _ in range(4)]
    assert ages == sorted(ages) and ages[3] > ages[2] > ages[1]


PACED_LOOP = """
import itertools, time
import xfertop
for _ in xfertop.watch(itertools.count()):
    time.sleep(0.01)
"""


@pytest.mark.parametrize("pidfds", [True, False], ids=["pidfd", "no-pidfd"])
def test_a_writer_that_dies_after_being_seen_alive_is_finished_on_the_next_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pidfds: bool
) -> None:
    if not pidfds:  # what a kernel before 5.3, or a sandbox that forbids the call, answers

        def no_pidfd(pid: int) -> int:
            raise OSError(errno.ENOSYS, "Function not implemented")

        monkeypatch.setattr(os, "pidfd_open", no_pidfd)
    rings = tmp_path / "rings"
    child = start_script(tmp_path, rings, PACED_LOOP)
    try:
        source = _source(rings, stall_after_s=60.0)
        wait_until(lambda: rank_with_steps(source, child.pid, 20), 30, "20 steps")
        for _ in range(3):
            assert [r.status for r in ranks(source)] == ["live"]
        start_ticks = wire.process_start_ticks(child.pid)
        child.kill()
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, not yet reaped: a zombie
        # A zombie still has its /proc/<pid>/stat: the source answers as /proc does.
        [rank] = ranks(source)
        assert (rank.status == "finished") == (not process_alive(child.pid, start_ticks))
    finally:
        child.kill()
        child.wait(timeout=10)
    assert [r.status for r in ranks(source)] == ["finished"]
    assert [r.status for r in ranks(source)] == ["finished"]


def test_a_directory_above_the_rings_that_turns_unsafe_is_refused_at_the_next_walk(tmp_path: Path) -> None:
    # The walk over every directory above the ring directory is done every DIR_RECHECK_S (a poll only
    # lstats the ring directory itself): a parent made writable by others is refused within that time.
    from xfertop.sources.jobs.source import DIR_RECHECK_S

    parent = tmp_path / "parent"
    ring_dir = parent / "rings"
    ring_dir.mkdir(parents=True, mode=0o700)
    now = [time.monotonic()]
    source = JobsSource(ring_dir=str(ring_dir), monotonic=lambda: now[0])
    assert source.sample_once().error is None
    parent.chmod(0o777)
    try:
        assert source.sample_once().error is None  # not walked again yet
        now[0] += DIR_RECHECK_S
        error = source.sample_once().error
        assert error is not None and "writable by other users" in error
        parent.chmod(0o700)
        now[0] += DIR_RECHECK_S
        assert source.sample_once().error is None
    finally:
        parent.chmod(0o700)
