"""Job churn: what the jobs source holds stays bounded however many short jobs come and go."""

from __future__ import annotations

import dataclasses
import gc
import os
import time
import tracemalloc
from pathlib import Path

from ring_test_tools import write_step
from xfertop import wire
from xfertop.reporter._identity import current_identity
from xfertop.reporter._ring_writer import RingWriter
from xfertop.sources.jobs.source import JobsSource

OWN_START_TICKS = wire.process_start_ticks()
STEPS_PER_JOB = 300


def _short_job(ring_dir: Path, index: int, now_ns: int) -> None:
    """The ring a short job left behind: 300 steps ending now, by a process that has ended (our pid, another
    start time), each job a run of its own."""
    ticks = index + 1 if index + 1 < OWN_START_TICKS else index + 2
    identity = dataclasses.replace(
        current_identity(),
        start_ticks=ticks,
        run_id=f"sweep-{index}",
        argv=("python", f"trial_{index}.py", "--lr", str(index)),
    )
    writer = RingWriter(str(ring_dir), identity)
    start_ns = now_ns - STEPS_PER_JOB * 1_000_000
    for step in range(STEPS_PER_JOB):
        write_step(writer, step, start_ns + step * 1_000_000, 1_000_000, 100_000, 0, 4096, 8, wire.F_COPIED)
    writer.words.release()
    writer._map.close()  # a writer that ended: this test process does not keep 1,000 mappings
    os.close(writer._fd)


def _traced_bytes() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def test_memory_held_by_the_jobs_source_is_bounded_under_job_churn(tmp_path: Path) -> None:
    ring_dir = tmp_path / "rings"
    clock = [time.monotonic()]
    source = JobsSource(ring_dir=str(ring_dir), finished_grace_s=60.0, monotonic=lambda: clock[0])
    tracemalloc.start()
    try:
        source.sample_once()
        baseline = _traced_bytes()
        held_after = {}
        for index in range(400):  # a job ends every 0.2 s: 300 of them within the 60 s grace period
            clock[0] += 0.2
            _short_job(ring_dir, index, int(clock[0] * 1e9))
            source.sample_once()
            if index + 1 in (100, 250, 400):
                held_after[index + 1] = _traced_bytes() - baseline
        clock[0] += 120.0  # every ring is past its grace period: removed, and forgotten
        state = source.sample_once()
        state = source.sample_once()
        left = _traced_bytes() - baseline
    finally:
        tracemalloc.stop()
    assert state.jobs == () and list(ring_dir.iterdir()) == []
    # Not one more job's steps per ended job: what is held stops growing once the source keeps its most.
    assert held_after[400] < 1.3 * held_after[100], held_after
    assert held_after[250] < 1.3 * held_after[100], held_after
    assert left < 256 * 1024, left
