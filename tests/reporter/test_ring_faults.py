"""Rings under abuse: a training process killed mid-write, its directory removed, a reader racing it."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ring_test_tools import child_env, rank_with_steps, ranks, start_script, wait_until, write_step
from xfertop import wire
from xfertop.model.jobs import StepRecord
from xfertop.reporter._identity import current_identity
from xfertop.reporter._ring_writer import RingWriter
from xfertop.sources.jobs.ring_reader import MAX_STEPS_PER_POLL, RingReader
from xfertop.sources.jobs.source import JobsSource

FAST_LOOP = """
import itertools
import xfertop
for _ in xfertop.watch(itertools.count()):
    pass
"""

PACED_LOOP = """
import itertools, time
import xfertop
for _ in xfertop.watch(itertools.count()):
    time.sleep(0.01)
"""


def _sane(steps: tuple[StepRecord, ...]) -> None:
    numbers = [s.step for s in steps]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers))), "steps are not contiguous"
    for s in steps:
        assert 0 <= s.data_wait_ms <= s.wall_ms < 10_000, s
        assert s.copy_cpu_ms == 0 and s.h2d_bytes == 0 and s.samples == 0, s
        # A plain watched loop: no model calls or syncs seen, no CUDA timing.
        assert s.loop_pre_ms == s.sync_ms == s.loop_post_ms == 0 and s.gpu_gap_ms is None, s
        assert not (s.partitioned or s.synced), s


def test_a_process_killed_mid_write_leaves_a_readable_ring_that_is_cleaned_up(tmp_path: Path) -> None:
    rings = tmp_path / "rings"
    child = start_script(tmp_path, rings, FAST_LOOP)
    now_s = [time.monotonic()]
    source = JobsSource(ring_dir=str(rings), finished_grace_s=30.0, monotonic=lambda: now_s[0])
    wait_until(lambda: rank_with_steps(source, child.pid, 2000), 30, "2000 steps")
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)
    [rank] = ranks(source)
    assert rank.status == "finished"
    # A viewer arriving now reads the whole history: contiguous, untorn (the live viewer above may
    # have been lapped by a writer this fast, and says how many steps it lost).
    [late] = ranks(JobsSource(ring_dir=str(rings)))
    _sane(late.steps)
    assert len(late.steps) == 1023 and late.steps[-1].step == rank.steps[-1].step
    now_s[0] += 31.0
    assert ranks(source) == []
    assert list(rings.iterdir()) == []


def test_a_deleted_ring_directory_is_recreated_with_its_history(tmp_path: Path) -> None:
    rings = tmp_path / "rings"
    child = start_script(tmp_path, rings, PACED_LOOP)
    try:
        wait_until(lambda: rank_with_steps(JobsSource(ring_dir=str(rings)), child.pid, 5), 30, "5 steps")
        shutil.rmtree(rings)
        wait_until(lambda: rings.is_dir() and any(rings.iterdir()), 10, "the ring to be written again")
        source = JobsSource(ring_dir=str(rings))
        rank = wait_until(lambda: rank_with_steps(source, child.pid, 250), 20, "steps after re-creation")
        assert rank.steps[0].step == 0 and rank.status == "live"
        _sane(rank.steps)
    finally:
        child.kill()
        child.wait(timeout=10)


RACING_WRITER = """
import sys, time
from xfertop import wire
from xfertop.reporter._identity import current_identity
from xfertop.reporter._ring_writer import RingWriter

writer = RingWriter(sys.argv[1], current_identity(), capacity=64)
print(writer.path, flush=True)
deadline = time.monotonic() + float(sys.argv[2])
step = 0
while time.monotonic() < deadline:
    writer.write_step(step, step * 1000 + 1, step * 3 + 7, step * 2 + 5, step * 11, step * 17, step * 19,
                      wire.NO_VALUE, step * 13, step % 1000, wire.F_GPU_PENDING, step * 29)
    if step >= 8:  # patch an older step's gap, as the GPU clock does, while the reader reads
        old = step - 8
        writer.patch_gpu(old, old * 23, wire.F_GPU_RESOLVED, wire.F_GPU_PENDING)
    step += 1
print(step, flush=True)
"""


def _ns(value_ms: float | None) -> int:
    assert value_ms is not None
    return round(value_ms * 1_000_000)


def _check_untorn(record: StepRecord) -> None:
    s = record.step
    assert (_ns(record.wall_ms), _ns(record.data_wait_ms), _ns(record.copy_cpu_ms)) == (
        s * 3 + 7,
        s * 2 + 5,
        s * 11,
    ), record
    assert (record.h2d_bytes, record.samples) == (s * 13, s % 1000), record
    assert (_ns(record.loop_pre_ms), _ns(record.sync_ms), _ns(record.loop_post_ms)) == (
        s * 17,
        s * 19,
        s * 29,
    ), record
    if record.gpu_gap_ms is not None:
        assert _ns(record.gpu_gap_ms) == s * 23, record


def test_a_reader_racing_the_writer_never_sees_a_torn_record(tmp_path: Path) -> None:
    rings = tmp_path / "rings"
    script = tmp_path / "racing_writer.py"
    script.write_text(RACING_WRITER)
    writer = subprocess.Popen(
        [sys.executable, str(script), str(rings), "2.0"],
        env=child_env(rings),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None
    path = writer.stdout.readline().strip()
    reader = RingReader(path)
    checked = 0
    patched = 0
    while writer.poll() is None:
        reader.poll()
        for record in list(reader.steps):
            _check_untorn(record)
            checked += 1
            patched += record.gpu_gap_ms is not None
        reader.steps.clear()
        time.sleep(0)  # let the writer run on a shared core
    written = int(writer.stdout.readline())
    reader.close()
    assert written > 10_000 and checked > 1000 and patched > 100, (written, checked, patched)


def _count_records_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Records the reader copies out of rings (in bulk and one by one), summed in the returned list."""
    read = [0]
    bulk, single = wire.read_records, wire.read_record

    def counting_bulk(
        words: memoryview, capacity: int, first_step: int, count: int
    ) -> list[list[int] | None]:
        found = bulk(words, capacity, first_step, count)
        read[0] += len(found)
        return found

    def counting_single(words: memoryview, capacity: int, step: int, attempts: int = 4) -> list[int] | None:
        read[0] += 1
        return single(words, capacity, step, attempts)

    monkeypatch.setattr(wire, "read_records", counting_bulk)
    monkeypatch.setattr(wire, "read_record", counting_single)
    return read


def _cpu_s_of(call: Callable[[], object]) -> float:
    started = time.thread_time()
    call()
    return time.thread_time() - started


def test_a_damaged_ring_with_its_write_index_running_ahead_costs_little_per_poll(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    healthy_dir, damaged_dir = tmp_path / "healthy", tmp_path / "damaged"
    healthy = RingWriter(str(healthy_dir), current_identity())
    for step in range(3 * healthy.capacity):
        write_step(healthy, step, step * 1000 + 1, 1000, samples=1)
    damaged = RingWriter(str(damaged_dir), current_identity(), capacity=wire.MAX_CAPACITY)
    for step in range(10):
        write_step(damaged, step, step * 1000 + 1, 1000, samples=1)
    damaged.set_word(wire.H_WRITE_INDEX, 5 * wire.MAX_CAPACITY)  # claims 5M steps; the slots hold 10
    read = _count_records_read(monkeypatch)
    healthy_source = JobsSource(ring_dir=str(healthy_dir))
    healthy_cpu_s = _cpu_s_of(healthy_source.sample_once)  # reads its whole history: 1023 steps
    healthy_records = read[0]
    damaged_source = JobsSource(ring_dir=str(damaged_dir))
    read[0] = 0
    damaged_cpu_s = [_cpu_s_of(damaged_source.sample_once) for _ in range(6)]
    # Every poll of the damaged ring reads fewer records than one read of a healthy ring's history ...
    assert read[0] <= healthy_records, (read[0], healthy_records)
    # ... and costs less CPU (before: each poll copied its 2^20 slots, ~0.5 s and ~230 MB).
    assert max(damaged_cpu_s[1:]) < healthy_cpu_s, (damaged_cpu_s, healthy_cpu_s)
    state = damaged_source.sample_once()
    [rank] = [rank for job in state.jobs for rank in job.ranks]
    assert rank.status in ("live", "stalled")
    [problem] = state.problems
    assert damaged.path in problem and "damaged" in problem and str(5 * wire.MAX_CAPACITY) in problem


def test_a_big_healthy_ring_is_read_newest_first_a_bounded_number_of_steps_per_poll(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = RingWriter(str(tmp_path), current_identity(), capacity=1 << 15)
    for step in range(20_000):
        write_step(writer, step, step * 1000 + 1, 1000, samples=1)
    read = _count_records_read(monkeypatch)
    [rank] = ranks(JobsSource(ring_dir=str(tmp_path)))
    assert read[0] <= MAX_STEPS_PER_POLL and len(rank.steps) <= MAX_STEPS_PER_POLL
    assert [s.step for s in rank.steps] == list(range(20_000 - len(rank.steps), 20_000))
