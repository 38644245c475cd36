"""Rings under abuse: a training process killed mid-write, its directory removed, a reader racing it."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from ring_test_tools import child_env, rank_with_steps, ranks, start_script, wait_until
from xfertop.model.jobs import StepRecord
from xfertop.sources.jobs import JobsSource
from xfertop.sources.ring_reader import RingReader

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


def test_a_process_killed_mid_write_leaves_a_readable_ring_that_is_cleaned_up(tmp_path: Path) -> None:
    rings = tmp_path / "rings"
    child = start_script(tmp_path, rings, FAST_LOOP)
    now_s = [0.0]
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
    now_s[0] = 31.0
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
    writer.write_step(step, step * 1000 + 1, step * 3 + 7, step * 2 + 5, step * 11, step * 13, step % 1000,
                      wire.F_GPU_PENDING)
    if step >= 8:  # patch an older step, as the GPU clock does, while the reader reads
        old = step - 8
        writer.patch_gpu(old, old * 17, old * 19, old * 23, wire.F_GPU_RESOLVED, wire.F_GPU_PENDING)
    step += 1
print(step, flush=True)
"""


def _ns(value_ms: float | None) -> int:
    assert value_ms is not None
    return round(value_ms * 1_000_000)


def _check_untorn(record: StepRecord) -> None:
    s = record.step
    assert (_ns(record.wall_ms), _ns(record.data_wait_ms), _ns(record.copy_cpu_ms)) == (
        s * 3 + 7, s * 2 + 5, s * 11), record
    assert (record.h2d_bytes, record.samples) == (s * 13, s % 1000), record
    if record.copy_gpu_ms is not None:
        assert (_ns(record.copy_gpu_ms), _ns(record.compute_gpu_ms), _ns(record.gpu_idle_ms)) == (
            s * 17, s * 19, s * 23), record


def test_a_reader_racing_the_writer_never_sees_a_torn_record(tmp_path: Path) -> None:
    rings = tmp_path / "rings"
    script = tmp_path / "racing_writer.py"
    script.write_text(RACING_WRITER)
    writer = subprocess.Popen([sys.executable, str(script), str(rings), "2.0"], env=child_env(rings),
                              stdout=subprocess.PIPE, text=True)
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
            patched += record.copy_gpu_ms is not None
        reader.steps.clear()
        time.sleep(0)  # let the writer run on a shared core
    written = int(writer.stdout.readline())
    reader.close()
    assert written > 10_000 and checked > 1000 and patched > 100, (written, checked, patched)
