"""The GPU half of the step clock against a fake CUDA that behaves like the real one (no GPU here).

The same stories run on a real GPU in tests/gpu/test_reporter_gpu.py.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from fakes.fake_cuda import FakeCuda, FakeEvent
from xfertop import wire
from xfertop.model.jobs import StepRecord
from xfertop.reporter._clock import StepClock, cuda_device_in_use
from xfertop.reporter._gpu_timer import GpuTimer
from xfertop.reporter._identity import current_identity
from xfertop.reporter._ring_writer import RingWriter
from xfertop.sources.ring_reader import RingReader


@pytest.fixture
def gpu() -> FakeCuda:
    return FakeCuda()


@pytest.fixture
def clock(tmp_path: Path, gpu: FakeCuda) -> StepClock:
    clock = StepClock(lambda: RingWriter(str(tmp_path), current_identity()))
    clock.before_next()  # opens the ring
    clock.gpu = GpuTimer(gpu, 0, max_pending=8)
    clock.gpu_sampling = False  # these stories check every step's GPU arithmetic; see test_gpu_sampling.py
    return clock


def _step(clock: StepClock, gpu: FakeCuda, wait_ms: float, copy_ms: float, compute_ms: float) -> None:
    """One loop iteration: the loader blocks wait_ms, then a copy and the model's kernels are queued."""
    clock.before_next()
    gpu.host_work(wait_ms)
    clock.after_next([0] * 4)
    gpu.launch(copy_ms)
    clock.copied(4096, False, False, 5_000, None)
    gpu.launch(compute_ms)
    gpu.host_work(0.5)  # launching costs the host a little


def _steps(clock: StepClock) -> list[StepRecord]:
    assert clock.writer is not None
    reader = RingReader(clock.writer.path)
    reader.poll()
    return list(reader.steps)


def test_a_starved_loop_shows_the_wait_as_gpu_idle(clock: StepClock, gpu: FakeCuda) -> None:
    for _ in range(12):
        _step(clock, gpu, wait_ms=20, copy_ms=2, compute_ms=10)
        gpu.host_work(5)  # the rest of the step on the host; the GPU still has 6.5 ms queued
    steps = [s for s in _steps(clock)[2:] if s.compute_gpu_ms is not None]
    assert len(steps) >= 8
    for s in steps:
        assert s.copy_gpu_ms == pytest.approx(2.0)
        assert s.compute_gpu_ms == pytest.approx(10.0)
        # Of the 20 ms wait the GPU felt only what its 6.5 ms backlog did not cover.
        assert s.gpu_idle_ms == pytest.approx(20.0 - 6.5)
    assert gpu.unfinished_elapsed_calls == 0 and gpu.synchronize_calls == 0 and clock.errors == 0


def test_queued_work_hides_the_wait(clock: StepClock, gpu: FakeCuda) -> None:
    for _ in range(12):
        _step(clock, gpu, wait_ms=5, copy_ms=1, compute_ms=30)  # the GPU falls further behind each step
    clock.before_next()
    gpu.host_work(1000)  # the GPU catches up; at exit the clock resolves what has completed
    clock.resolve_pending()
    steps = _steps(clock)
    assert all(s.compute_gpu_ms is None for s in steps[1:4])  # dropped: more than 8 steps pending
    assert all(s.gpu_idle_ms == pytest.approx(0.0) for s in steps[4:12]), steps
    assert all(s.data_wait_ms >= 0 for s in steps)


def test_events_resolve_lazily_and_never_too_early(clock: StepClock, gpu: FakeCuda) -> None:
    _step(clock, gpu, wait_ms=1, copy_ms=1, compute_ms=500)
    _step(clock, gpu, wait_ms=1, copy_ms=1, compute_ms=500)
    clock.before_next()
    assert all(s.compute_gpu_ms is None for s in _steps(clock))  # the GPU is still busy: nothing resolved
    gpu.host_work(2000)
    clock.after_next([0])
    clock.before_next()
    resolved = [s for s in _steps(clock) if s.compute_gpu_ms is not None]
    assert resolved and gpu.unfinished_elapsed_calls == 0 and clock.errors == 0


def test_no_events_while_a_cuda_graph_is_captured(clock: StepClock, gpu: FakeCuda) -> None:
    gpu.capturing = True
    for _ in range(5):
        _step(clock, gpu, wait_ms=1, copy_ms=1, compute_ms=1)
    clock.before_next()
    assert gpu.records == 0 and clock.errors == 0
    assert all(s.compute_gpu_ms is None for s in _steps(clock))


def test_a_hung_gpu_drops_old_steps_instead_of_growing(clock: StepClock, gpu: FakeCuda) -> None:
    gpu.launch(1e9)  # never finishes within the test
    for _ in range(40):
        _step(clock, gpu, wait_ms=1, copy_ms=1, compute_ms=1)
    clock.before_next()
    assert clock.gpu is not None and clock.gpu.pending_count <= 8
    assert clock.errors == 0
    assert clock.writer is not None
    assert clock.writer.words[wire.H_GPU_DROPPED] >= 30


def test_the_stream_object_is_reused_until_another_stream_becomes_current(
    clock: StepClock, gpu: FakeCuda
) -> None:
    for _ in range(10):
        _step(clock, gpu, wait_ms=1, copy_ms=1, compute_ms=1)
    assert gpu.current_stream_objects_made == 1
    side = gpu.use_stream(7)
    _step(clock, gpu, wait_ms=1, copy_ms=1, compute_ms=50)
    clock.before_next()
    assert gpu.current_stream_objects_made == 2
    assert side.busy_until_ms > 0 and clock.errors == 0


def test_the_gpu_in_use_is_found_without_a_copy_but_never_guessed() -> None:
    gpu = FakeCuda()
    assert cuda_device_in_use(gpu, None) is None  # nothing reserved anywhere: no context opened
    gpu.reserved_bytes[1] = 1 << 20
    assert cuda_device_in_use(gpu, "1") == 1  # a DDP rank computing on cuda:1 without set_device
    assert cuda_device_in_use(gpu, "0") is None  # current device 0 holds nothing of ours
    gpu.reserved_bytes[0] = 1 << 20
    assert cuda_device_in_use(gpu, None) == 0
    gpu.initialized = False
    assert cuda_device_in_use(gpu, None) is None


def test_a_failing_cuda_call_is_counted_and_the_loop_goes_on(
    clock: StepClock, gpu: FakeCuda, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_record(self: FakeEvent, stream: object = None) -> None:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(FakeEvent, "record", broken_record)
    for _ in range(30):
        _step(clock, gpu, wait_ms=1, copy_ms=1, compute_ms=1)
    clock.before_next()
    assert clock.disabled and clock.errors == 10
    assert "illegal memory access" in clock.last_error


def test_a_second_copy_inside_a_cuda_graph_capture_records_nothing(clock: StepClock, gpu: FakeCuda) -> None:
    # The step's first copy ran eagerly; the next one is part of a graph being captured: re-recording the
    # copied event there would put our event into the user's graph (or invalidate the capture).
    for _ in range(3):
        _step(clock, gpu, wait_ms=1, copy_ms=1, compute_ms=1)
    clock.before_next()
    clock.after_next([0])
    clock.copied(4096, False, False, 5_000, None)
    gpu.capturing = True
    records_before = gpu.records
    clock.copied(4096, False, False, 5_000, None)
    assert gpu.records == records_before and clock.errors == 0


def test_a_late_copy_seen_by_copy_timing_does_not_stretch_the_steps_copy(
    clock: StepClock, gpu: FakeCuda, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Seen on the H200: an HF Trainer job under `xfertop run` read "copy-bound: 100% of each step": a
    # small .to() after the backward pass moved the copy mark to the end of the step. Copies seen by copy
    # timing set the mark only in the step's first burst; their bytes still count.
    clock_module = importlib.import_module("xfertop.reporter._clock")  # the package's _clock is the clock
    host_ns = [10**12]
    monkeypatch.setattr(clock_module, "_now_ns", lambda: host_ns[0])

    def host(ms: float) -> None:
        gpu.host_work(ms)
        host_ns[0] += int(ms * 1e6)

    for _ in range(30):
        clock.before_next()
        host(1.0)
        clock.after_next([0] * 4)
        gpu.launch(2.0)
        clock.copied(4096, False, False, 5_000, None, seen=True)  # the batch
        gpu.launch(0.1)
        host(0.01)
        clock.copied(4096, False, False, 5_000, None, seen=True)  # its labels, right after
        gpu.launch(20.0)  # forward and backward
        host(25.0)  # the host waits on the GPU (a loss.item()): the GPU keeps up, nothing is dropped
        clock.copied(8, False, False, 5_000, None, seen=True)  # a logging scalar, after the backward pass
        gpu.launch(0.5)
        host(0.5)
    host(100.0)
    clock.resolve_pending()
    timed = [s for s in _steps(clock) if s.copy_gpu_ms is not None]
    assert len(timed) >= 20
    assert all(2.0 <= s.copy_gpu_ms <= 2.2 for s in timed), [s.copy_gpu_ms for s in timed]
    assert all(s.h2d_bytes == 4096 * 2 + 8 for s in timed)


def test_a_prefetching_loaders_copy_of_the_next_batch_is_not_this_steps_copy(
    clock: StepClock, gpu: FakeCuda, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Seen on the H200: an HF Trainer job (accelerate's DataLoaderShard) read "copy-bound: 100%" under
    # `xfertop run`. The shard moves batch k+1 to the GPU *before* the boundary that yields batch k, so
    # inside one clock step the compute of batch k comes first and the copy of batch k+1 last.
    clock_module = importlib.import_module("xfertop.reporter._clock")
    host_ns = [10**12]
    monkeypatch.setattr(clock_module, "_now_ns", lambda: host_ns[0])

    def host(ms: float) -> None:
        gpu.host_work(ms)
        host_ns[0] += int(ms * 1e6)

    for _ in range(30):
        clock.before_next()
        host(0.2)
        clock.after_next([0] * 4)  # batch k+1 fetched; batch k is trained now
        gpu.launch(20.0)  # forward and backward of batch k
        host(21.0)
        clock.copied(4096, False, False, 100_000, None, seen=True)  # send_to_device(batch k+1)
        gpu.launch(0.5)
        host(0.5)
    host(100.0)
    clock.resolve_pending()
    steps = _steps(clock)[2:]
    assert all(s.h2d_bytes == 4096 for s in steps)  # the bytes still count
    timed = [s for s in steps if s.compute_gpu_ms is not None]
    assert len(timed) >= 20
    # No copy mark: the copy sits inside compute, which is ~all of the step, instead of a copy of ~20 ms.
    assert all(s.copy_gpu_ms is None for s in timed), [s.copy_gpu_ms for s in timed]
    assert all(s.compute_gpu_ms >= 20.0 for s in timed)


def _host_clock(monkeypatch: pytest.MonkeyPatch, gpu: FakeCuda):
    clock_module = importlib.import_module("xfertop.reporter._clock")
    host_ns = [10**12]
    monkeypatch.setattr(clock_module, "_now_ns", lambda: host_ns[0])

    def host(ms: float) -> None:
        gpu.host_work(ms)
        host_ns[0] += int(ms * 1e6)

    return host, host_ns


def test_a_copy_made_after_preprocessing_in_the_loop_keeps_its_copy_mark(
    clock: StepClock, gpu: FakeCuda, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The review's case: 12 ms of tokenising on the main thread, then the batch's copy: late in the step,
    # but the step's own copy (the boundary comes long after it), unlike a prefetching loader's.
    host, _ = _host_clock(monkeypatch, gpu)
    for _ in range(30):
        clock.before_next()
        host(0.2)
        clock.after_next([0] * 4)
        host(12.0)  # preprocessing on the host
        gpu.launch(8.0)
        host(8.0)  # a pageable copy: the host waits for it
        clock.copied(4096, True, False, 8_000_000, None, seen=True)
        gpu.launch(10.0)
        host(10.5)
    host(100.0)
    clock.resolve_pending()
    timed = [s for s in _steps(clock)[2:] if s.compute_gpu_ms is not None]
    assert len(timed) >= 20
    assert all(s.copy_gpu_ms is not None and s.copy_gpu_ms >= 8.0 for s in timed), [
        s.copy_gpu_ms for s in timed
    ]


def test_an_epochs_first_step_idles_no_longer_than_it_waited(
    clock: StepClock, gpu: FakeCuda, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A 500 ms checkpoint between epochs is no step's: the new epoch's first step waited 50 ms (worker
    # start-up), so its GPU idle gap is at most that, and idle + compute stay within its wall.
    host, host_ns = _host_clock(monkeypatch, gpu)
    for _ in range(10):
        _step(clock, gpu, wait_ms=1, copy_ms=1, compute_ms=10)
        host(11.0)
    clock.before_next()  # the epoch's last next(): StopIteration follows, the step is closed
    host(500.0)  # checkpoint
    began = host_ns[0]
    host(50.0)  # iter(loader): workers start
    clock.before_next(began, wire.F_EPOCH_START | wire.F_WORKERS_STARTED, 50_000_000)
    clock.after_next([0] * 4)
    gpu.launch(10.0)
    host(10.5)
    clock.before_next()
    host(100.0)
    clock.resolve_pending()
    first = next(s for s in _steps(clock) if s.epoch_start)
    assert first.workers_started and first.data_wait_ms == pytest.approx(50.0, abs=0.1)
    assert first.gpu_idle_ms is not None and first.gpu_idle_ms <= 50.0 + 0.1
    assert first.gpu_idle_ms + (first.compute_gpu_ms or 0) <= first.wall_ms + 0.1


def test_an_iterator_made_long_before_its_first_next_adds_only_its_own_time(
    clock: StepClock, gpu: FakeCuda, monkeypatch: pytest.MonkeyPatch
) -> None:
    host, host_ns = _host_clock(monkeypatch, gpu)
    made = host_ns[0]
    host(1.0)  # iter(val_loader) at setup: 1 ms
    for _ in range(5):
        _step(clock, gpu, wait_ms=1, copy_ms=1, compute_ms=10)
        host(11.0)
    clock.before_next()  # the training epoch ends
    host(1200.0)  # anything between
    clock.before_next(made, wire.F_EPOCH_START, 1_000_000)  # the validation pass's first next()
    clock.after_next([0] * 4)
    host(5.0)
    clock.before_next()
    host(100.0)
    clock.resolve_pending()
    first = next(s for s in _steps(clock) if s.epoch_start)
    assert first.data_wait_ms == pytest.approx(1.0, abs=0.1)
