"""The GPU half of the step clock against a fake CUDA that behaves like the real one (no GPU here).

The clock measures one thing on the GPU: how long it sat idle before a step's first work. The step
before records ``after`` once its model has queued its work; at the next step's first work ``after`` is
asked: still running -> gap 0, and no event more; drained -> an event ``first`` now, which completes at
once on the empty stream, and after->first is the gap. The host's own clock, and a fake CUDA driven by
it, run here on one fake time line, so every gap is exact. The same stories run on a real GPU in
tests/gpu/test_reporter_gpu.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from fakes.fake_cuda import FakeCuda, FakeEvent
from ring_test_tools import book_timed_copy, fake_clock_time
from xfertop import wire
from xfertop.analysis.steps import attribute_idle, window_stats
from xfertop.model.jobs import StepRecord
from xfertop.reporter._clock import StepClock
from xfertop.reporter._gpu_gap import cuda_device_in_use
from xfertop.reporter._gpu_timer import GpuTimer
from xfertop.reporter._identity import current_identity
from xfertop.reporter._ring_writer import RingWriter
from xfertop.sources.jobs.ring_reader import RingReader

MS = 1_000_000


class GpuLoop:
    """A training loop on the fake GPU. The step clock's host clock (``_now_ns``) and the fake's host time
    move together. ``partitioning``: under `xfertop run`, whose hooks say where copies and the model's
    calls begin and where the model ends; without it, a plain ``xfertop.watch`` loop."""

    def __init__(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpu: FakeCuda, partitioning: bool
    ) -> None:
        self.gpu = gpu
        self.partitioning = partitioning
        self.now_ns = 10**12
        fake_clock_time(monkeypatch, lambda: self.now_ns)
        self.clock = StepClock(lambda: RingWriter(str(tmp_path), current_identity()))
        self.clock.partitioning = partitioning
        self.clock.before_next()  # opens the ring
        self.clock.gap.timer = GpuTimer(gpu, 0, max_pending=8)
        # These stories check every step's gap; sampling has tests/reporter/test_gpu_sampling.py.
        self.clock.gap.sampling.enabled = False
        self.iteration_steps = 0

    def host(self, ms: float) -> None:
        self.gpu.host_work(ms)
        self.now_ns += round(ms * MS)

    def next_batch(self, wait_ms: float, source: int = 0) -> None:
        """next(loader): the loader blocks ``wait_ms``; the step before closes, this one opens. ``source``:
        the iterator, as the watched loader names it (0: not named), its steps counted as the loader's
        wrapper counts them."""
        self.clock.before_next(source=source, loader=source)
        self.host(wait_ms)
        self.clock.after_next([0] * 4)
        if source:
            self.iteration_steps += 1
            self.clock.count_iteration_step(self.iteration_steps, 0, source)

    def validation_pass(self, batches: int, wait_ms: float, gpu_ms: float, source: int = 2) -> None:
        """A pass over another loader inside the open step: each batch waited ``wait_ms`` for, then its
        forward queued at once (``gpu_ms`` of kernels, 0.2 ms on the host); the pass's last next() ends it
        (StopIteration). Its first next() makes the iterator inside the step, as ``for v in val`` does."""
        for index in range(batches + 1):
            if index == 0:
                self.clock.before_next(self.now_ns, wire.F_EPOCH_START, 0, source, source)
            else:
                self.clock.before_next(source=source)
            if index == batches:
                self.clock.loader_ended()
                return
            self.host(wait_ms)
            self.clock.after_next([0] * 4)
            self.gpu.launch(gpu_ms)
            self.host(0.2)

    def copy(self, host_ms: float, gpu_ms: float, seen: bool = True) -> None:
        """A copy to the GPU: seen by `xfertop run`'s copy timing (work starts before it is issued), or
        marked by the loop after it (to_device)."""
        if seen:
            self.clock.work.starting()
        self.gpu.launch(gpu_ms)
        self.host(host_ms)
        if seen:  # copy timing books it as `xfertop run`'s Tensor.to wrapper does
            book_timed_copy(self.clock.work, 4096, round(host_ms * MS))
        else:
            self.clock.work.copied(4096, False, False, round(host_ms * MS), None)

    def model(self, host_ms: float, gpu_ms: float) -> None:
        """Forward, backward and optimizer step: ``host_ms`` on the host, queueing ``gpu_ms`` of kernels."""
        if self.partitioning:
            self.clock.work.starting()  # the model's call
        self.gpu.launch(gpu_ms)
        self.host(host_ms)
        if self.partitioning:
            self.clock.work.model_ended()  # the optimizer step's end

    def sync(self) -> None:
        """loss.item(): the host blocks until the stream has run its work."""
        waited_ms = max(0.0, self.gpu.stream.busy_until_ms - self.gpu.host_ms)
        self.host(waited_ms)
        self.clock.work.synced(round(waited_ms * MS))

    def steps(self) -> list[StepRecord]:
        assert self.clock.writer is not None
        reader = RingReader(self.clock.writer.path)
        reader.poll()
        steps = list(reader.steps)
        reader.close()
        return steps

    def finish(self) -> list[StepRecord]:
        """The loop ends; much later, at exit, the clock resolves the gaps whose events have completed."""
        self.clock.before_next()
        self.host(10_000)
        self.clock.resolve_pending()
        assert self.clock.errors == 0, self.clock.last_error
        assert self.gpu.unfinished_elapsed_calls == 0 and self.gpu.synchronize_calls == 0
        return self.steps()


@pytest.fixture
def gpu() -> FakeCuda:
    return FakeCuda()


@pytest.fixture
def plain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpu: FakeCuda) -> GpuLoop:
    return GpuLoop(tmp_path, monkeypatch, gpu, partitioning=False)


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpu: FakeCuda) -> GpuLoop:
    return GpuLoop(tmp_path, monkeypatch, gpu, partitioning=True)


def _starved_step(loop: GpuLoop, wait_ms: float = 20.0) -> None:
    loop.next_batch(wait_ms)
    loop.copy(0.0, 2.0, seen=False)
    loop.model(0.5, 10.0)
    loop.host(5.0)  # the rest of the step on the host; the GPU still has 6.5 ms queued at its end


def _ms(value: float) -> object:
    """A gap as the ring holds it: whole nanoseconds, truncated."""
    return pytest.approx(value, abs=1e-6)


def _host_parts_sum(step: StepRecord) -> float:
    return (
        step.data_wait_ms
        + step.loop_pre_ms
        + step.copy_cpu_ms
        + step.model_ms
        + step.sync_ms
        + step.loop_post_ms
    )


# -- the fake itself: the facts of CUDA events the clock rests on (the same on a real GPU: tests/gpu) ----
def test_the_fakes_events_complete_as_real_ones_do(gpu: FakeCuda) -> None:
    never_recorded = gpu.cuda.Event(enable_timing=True)
    assert never_recorded.query()  # cudaEventQuery of an event never recorded: cudaSuccess
    idle = gpu.cuda.Event(enable_timing=True)
    idle.record(gpu.cuda.current_stream())
    assert idle.query()  # on an empty stream an event completes when the host records it
    gpu.launch(50.0)
    behind = gpu.cuda.Event(enable_timing=True)
    behind.record(gpu.cuda.current_stream())
    assert not behind.query()  # not until the stream reaches it
    with pytest.raises(RuntimeError, match="Both events must be completed"):
        idle.elapsed_time(behind)
    side = gpu.use_stream(1)
    on_side = gpu.cuda.Event(enable_timing=True)
    on_side.record(side)
    assert on_side.query()  # another stream's work does not hold it back
    gpu.use_stream(0)
    assert gpu.stream.busy_until_ms == 50.0  # the default stream kept its work
    gpu.host_work(49.0)
    assert not behind.query()
    gpu.cuda.synchronize()  # the host blocks until every stream has drained
    assert behind.query() and gpu.host_ms == 50.0
    assert idle.elapsed_time(behind) == pytest.approx(50.0)
    assert gpu.unfinished_elapsed_calls == 1


# -- the gap ---------------------------------------------------------------------------------------------
def test_a_starved_loop_shows_the_part_of_the_wait_its_backlog_did_not_cover(
    plain: GpuLoop, gpu: FakeCuda
) -> None:
    for _ in range(12):
        _starved_step(plain)
    steps = plain.finish()[1:]  # step 0 has no step before it to measure from
    assert len(steps) == 11
    for s in steps:
        # Of the 20 ms wait the GPU felt only what its 6.5 ms backlog did not cover.
        assert s.gpu_gap_ms == _ms(20.0 - 6.5)
        assert s.data_wait_ms == pytest.approx(20.0)
        assert _host_parts_sum(s) == pytest.approx(s.wall_ms)
    # One event at each step's end, one at each next step's first work; each gap asked once.
    assert gpu.records == 2 * len(steps) + 1 and gpu.elapsed_calls == len(steps)


def test_queued_work_hides_the_wait_and_costs_no_event(plain: GpuLoop, gpu: FakeCuda) -> None:
    for _ in range(12):
        plain.next_batch(5.0)
        plain.copy(0.0, 1.0, seen=False)
        plain.model(0.5, 30.0)  # the GPU falls further behind each step
    plain.clock.before_next()
    # The gap of 0 is in the ring as soon as each step closes: no event to wait for.
    steps = plain.steps()
    assert len(steps) == 12 and steps[0].gpu_gap_ms is None
    assert all(s.gpu_gap_ms == 0.0 for s in steps[1:]), [s.gpu_gap_ms for s in steps]
    assert plain.clock.gap.timer is not None and len(plain.clock.gap.timer.pending) == 0
    # Only the ``after`` event of each step: asked once, never a ``first``, never an elapsed_time.
    assert gpu.records == 12 and gpu.queries == 11 and gpu.elapsed_calls == 0
    assert plain.clock.gap.timed_steps == 0
    assert plain.clock.writer is not None and plain.clock.writer.words[wire.H_GPU_DROPPED] == 0


def test_a_gap_resolves_lazily_and_never_too_early(plain: GpuLoop, gpu: FakeCuda) -> None:
    plain.next_batch(1.0)
    plain.model(1.0, 5.0)
    model_done_ms = gpu.stream.busy_until_ms
    plain.clock.before_next()  # ``after`` at the step's end
    plain.host(10.0)  # the GPU drains
    copy_began_ms = gpu.host_ms
    gpu.launch(500.0)  # the loader itself moves the batch to the GPU inside next()
    plain.clock.after_next([0] * 4)  # ``after`` has completed: ``first``, behind the loader's copy
    plain.host(1.0)
    plain.clock.before_next()
    assert [s.gpu_gap_ms for s in plain.steps()] == [None, None]  # its events have not completed
    plain.host(2000.0)
    plain.clock.after_next([0] * 4)
    plain.host(1.0)
    plain.clock.before_next()  # at this boundary the oldest pending gap is asked again, and resolves
    gaps = [s.gpu_gap_ms for s in plain.steps()]
    # The GPU ran nothing of the model's from its last kernel to the event, which sits behind the copy.
    assert gaps[1] == _ms(copy_began_ms + 500.0 - model_done_ms)
    assert gpu.unfinished_elapsed_calls == 0 and plain.clock.errors == 0


def test_no_events_while_a_cuda_graph_is_captured(plain: GpuLoop, gpu: FakeCuda) -> None:
    gpu.capturing = True
    for _ in range(5):
        _starved_step(plain, wait_ms=1.0)
    steps = plain.finish()
    assert gpu.records == 0
    assert all(s.gpu_gap_ms is None for s in steps)


def test_a_hung_gpu_leaves_nothing_pending_and_no_event_behind(plain: GpuLoop, gpu: FakeCuda) -> None:
    made: list[FakeEvent] = []
    make = gpu.cuda.Event
    gpu.cuda.Event = lambda enable_timing=False: made.append(make(enable_timing)) or made[-1]
    gpu.launch(1e9)  # never finishes within the test
    for _ in range(40):
        _starved_step(plain, wait_ms=1.0)
    plain.clock.before_next()
    steps = plain.steps()
    assert all(s.gpu_gap_ms == 0.0 for s in steps[1:])  # work was always queued: never idle
    assert plain.clock.gap.timer is not None and len(plain.clock.gap.timer.pending) == 0
    assert len(made) <= 2  # each step's ``after`` goes back to the pool once asked
    assert plain.clock.errors == 0 and gpu.elapsed_calls == 0
    assert plain.clock.writer is not None and plain.clock.writer.words[wire.H_GPU_DROPPED] == 0


def test_pending_gaps_are_bounded_and_the_oldest_dropped(plain: GpuLoop, gpu: FakeCuda) -> None:
    # A loader that leaves its copy stream current when it yields, a stream that never drains: each
    # step's ``first`` event lands there and never completes, while the model runs on the default stream.
    gpu.use_stream(1)
    gpu.launch(1e9)
    for _ in range(40):
        gpu.use_stream(0)
        plain.clock.before_next()  # ``after`` on the default stream, which has drained by then
        plain.host(1.0)
        gpu.use_stream(1)
        plain.clock.after_next([0] * 4)
        gpu.use_stream(0)
        plain.model(1.0, 0.5)
    plain.clock.before_next()
    assert plain.clock.gap.timer is not None and len(plain.clock.gap.timer.pending) <= 8
    assert plain.clock.errors == 0 and gpu.unfinished_elapsed_calls == 0
    assert plain.clock.writer is not None and plain.clock.writer.words[wire.H_GPU_DROPPED] >= 30
    steps = plain.steps()
    assert all(s.gpu_gap_ms is None for s in steps)  # dropped or still pending: none measured


def test_the_stream_object_is_reused_until_another_stream_becomes_current(
    plain: GpuLoop, gpu: FakeCuda
) -> None:
    for _ in range(10):
        _starved_step(plain, wait_ms=1.0)
    assert gpu.current_stream_objects_made == 1
    side = gpu.use_stream(7)
    plain.next_batch(1.0)
    plain.model(1.0, 50.0)
    plain.clock.before_next()
    assert gpu.current_stream_objects_made == 2
    assert side.busy_until_ms > 0 and plain.clock.errors == 0


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
    plain: GpuLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_record(self: FakeEvent, stream: object = None) -> None:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(FakeEvent, "record", broken_record)
    for _ in range(30):
        _starved_step(plain, wait_ms=1.0)
    plain.clock.before_next()
    assert plain.clock.disabled and plain.clock.errors == 10
    assert "illegal memory access" in plain.clock.last_error


def test_the_models_end_inside_a_cuda_graph_capture_records_nothing(run: GpuLoop, gpu: FakeCuda) -> None:
    # The step's forward ran eagerly and recorded ``after``; its backward is part of a graph being
    # captured: re-recording ``after`` there would put our event into the user's graph (or invalidate the
    # capture).
    for _ in range(3):
        run.next_batch(1.0)
        run.model(1.0, 1.0)
    run.next_batch(1.0)
    run.model(1.0, 1.0)
    gpu.capturing = True
    records_before = gpu.records
    run.clock.work.model_ended()
    # The next step's first work comes while the graph is still captured: no ``first`` event, no gap.
    run.next_batch(1.0)
    run.clock.work.starting()
    assert gpu.records == records_before and run.clock.errors == 0
    gpu.capturing = False
    run.host(1.0)
    run.clock.before_next()
    assert run.steps()[-1].gpu_gap_ms is None


# -- where the gap is measured under `xfertop run` -------------------------------------------------------
def test_the_gap_is_measured_at_the_steps_first_work_not_when_its_batch_arrives(
    run: GpuLoop, gpu: FakeCuda
) -> None:
    for _ in range(12):
        run.next_batch(2.0)
        run.host(10.0)  # augmenting on the CPU before the copy: the loop's own work
        run.copy(0.1, 1.0)
        run.model(3.0, 8.0)
        run.host(1.0)  # a log line after the optimizer step
    steps = run.finish()[1:]
    for s in steps:
        assert (s.data_wait_ms, s.loop_pre_ms, s.loop_post_ms) == pytest.approx((2.0, 10.0, 1.0))
        assert s.copy_cpu_ms == pytest.approx(0.1) and s.partitioned
        assert _host_parts_sum(s) == pytest.approx(s.wall_ms)
        # The model's kernels ran 5.9 ms past its last call; the GPU then idled through the rest of the
        # 13 ms before the next copy (loop after, wait, loop before). Asked at the batch's arrival, the
        # GPU would still have been busy, and the gap 0.
        assert s.gpu_gap_ms == _ms(1.0 + 2.0 + 10.0 - 5.9)


def test_the_gap_starts_at_the_models_end_not_at_the_steps(run: GpuLoop, gpu: FakeCuda) -> None:
    for _ in range(12):
        run.next_batch(1.0)
        run.model(1.0, 5.0)
        run.host(20.0)  # metrics and logging in Python after the optimizer step: the GPU has nothing
    steps = run.finish()[1:]
    for s in steps:
        assert s.loop_post_ms == pytest.approx(20.0)
        # The GPU finished 4 ms after the model's last call and idled 17 ms of the loop's 20 ms after it
        # and the 1 ms wait, all of it before this step's model call.
        assert s.gpu_gap_ms == _ms(20.0 - 4.0 + 1.0)


def test_a_loss_item_waits_in_sync_and_hides_no_gap(run: GpuLoop, gpu: FakeCuda) -> None:
    for _ in range(12):
        run.next_batch(1.0)
        run.model(1.0, 20.0)
        run.sync()  # loss.item() for the progress bar: the host waits for the GPU
        run.host(2.0)
    steps = run.finish()[1:]
    for s in steps:
        assert s.synced and s.sync_ms == pytest.approx(19.0)
        assert s.loop_post_ms == pytest.approx(2.0)  # the sync is not the loop's own work
        assert _host_parts_sum(s) == pytest.approx(s.wall_ms)
        assert s.gpu_gap_ms == _ms(2.0 + 1.0)  # the GPU idled only after the sync


def test_a_prefetching_loaders_copy_of_the_next_batch_is_copy_time_not_loop_work(
    run: GpuLoop, gpu: FakeCuda
) -> None:
    # An HF Trainer job (accelerate's DataLoaderShard) moves batch k+1 to the GPU after the boundary that
    # opened the step of batch k: inside one clock step the model of batch k comes first, the copy last.
    for _ in range(12):
        run.next_batch(0.2)
        run.model(21.0, 20.0)
        run.copy(0.5, 0.5)  # send_to_device(batch k+1)
    steps = run.finish()[1:]
    for s in steps:
        assert s.h2d_bytes == 4096  # the bytes still count
        assert (s.loop_pre_ms, s.copy_cpu_ms, s.loop_post_ms) == pytest.approx((0.0, 0.5, 0.0))
        # Nothing of the model's ran on the GPU through the copy and the wait.
        assert s.gpu_gap_ms == _ms(0.5 + 0.2)


def test_copies_after_the_backward_pass_stay_copies(run: GpuLoop, gpu: FakeCuda) -> None:
    # An HF Trainer job read "copy-bound: 100% of each step" when a logging scalar's .to() after the
    # backward pass counted as the step's copy: now a copy is its host time, wherever it falls.
    for _ in range(12):
        run.next_batch(1.0)
        run.copy(0.2, 2.0)  # the batch
        run.copy(0.01, 0.1)  # its labels
        run.model(2.0, 20.0)
        run.sync()  # loss.item()
        run.copy(0.05, 0.5)  # a logging scalar
        run.host(0.5)
    steps = run.finish()[1:]
    for s in steps:
        assert s.h2d_bytes == 3 * 4096
        assert s.copy_cpu_ms == pytest.approx(0.26)
        assert s.loop_post_ms == pytest.approx(0.5)
        assert s.sync_ms > 15.0 and s.model_ms == pytest.approx(2.0)


# -- a pass over another loader inside a step ------------------------------------------------------------
# The step after a pass has its gap asked against an event recorded before the pass queued its kernels:
# timed as one interval, the pass's kernels were idle time (session 41's k: 99% busy by NVML, 16% idle
# by the clock, "loop-bound"). Each story holds the gap to the fake GPU's true idle over the same span.


def _pass_every_fifth_step(
    run: GpuLoop, wait_ms: float, before_model: bool = False
) -> list[tuple[float, float]]:
    """Twenty training steps on loader 1 (each logs its loss.item()), a 4-batch pass over loader 2 in
    every fifth, after the model or at the top of the body. Returns the span (host ms) that the gap of
    each step measured across a pass covers: from the model's end before the pass to the first work
    after it."""
    spans = []
    model_end = 0.0
    for index in range(20):
        run.next_batch(0.5, source=1)
        passing = index % 5 == 4
        if passing and before_model:
            run.host(1.0)  # a log line first (a next() at once on another loader reads as a zip)
            run.validation_pass(4, wait_ms, gpu_ms=3.0)
        passed = passing if before_model else index % 5 == 0 and index > 0
        if passed:
            spans.append((model_end, run.gpu.host_ms))
        run.copy(0.1, 1.0)
        run.model(1.0, 8.0)
        model_end = run.gpu.host_ms
        run.sync()  # loss.item(): no backlog carries into the next step
        if passing and not before_model:
            run.validation_pass(4, wait_ms, gpu_ms=3.0)
            run.sync()  # float(correct): the host waits for the pass's kernels
            run.host(0.3)
    return spans


@pytest.mark.parametrize("wait_ms", [0.5, 12.0])
def test_a_pass_after_the_model_leaves_its_kernels_out_of_the_next_steps_gap(
    run: GpuLoop, gpu: FakeCuda, wait_ms: float
) -> None:
    # 0.5 ms waits: the pass keeps the GPU busy (its kernels, 12 ms of them, queue up); 12 ms waits: the
    # GPU drains in each, and those pieces of idle are the gap's (each truncated to whole ns).
    spans = _pass_every_fifth_step(run, wait_ms)
    steps = {s.step: s for s in run.finish()}
    after_pass = [steps[s] for s in steps if s > 0 and steps[s - 1].nested_pass]
    assert len(after_pass) == len(spans) == 3  # the last pass has no step after it
    for step, (begin, end) in zip(after_pass, spans, strict=True):
        assert step.gpu_gap_ms == pytest.approx(gpu.idle_ms(begin, end), abs=1e-5)
        assert step.gpu_gap_ms < end - begin - 12.0  # the pass's kernels are not in it
    if wait_ms > 8.0:
        assert all(s.gpu_gap_ms > 3 * (wait_ms - 3.0) for s in after_pass)  # 3 waits past the model's work


def test_a_pass_before_the_model_leaves_its_kernels_out_of_its_steps_gap(run: GpuLoop, gpu: FakeCuda) -> None:
    spans = _pass_every_fifth_step(run, 12.0, before_model=True)
    steps = run.finish()
    passed = [s for s in steps if s.nested_pass]
    assert len(passed) == len(spans) == 4
    for step, (begin, end) in zip(passed, spans, strict=True):
        assert step.gpu_gap_ms == pytest.approx(gpu.idle_ms(begin, end), abs=1e-5)
        assert step.gpu_gap_ms < end - begin - 12.0


@pytest.mark.parametrize("val_wait_ms", [9.0, 1.0])
def test_a_validation_batch_after_each_step_leaves_its_kernels_out(
    run: GpuLoop, gpu: FakeCuda, val_wait_ms: float
) -> None:
    # next(val_it) once a step after the model: the pass ends with the training loader's next(), no
    # StopIteration, and no next() of its own after its batch's work. 9 ms: the GPU drained before the
    # batch came; 1 ms: the model's kernels still ran (no piece), yet the batch's kernels are no idle.
    model_end, spans = 0.0, []
    for index in range(12):
        run.next_batch(2.0 if val_wait_ms > 5 else 20.0, source=1)
        if index:
            spans.append((model_end, gpu.host_ms))
        run.copy(0.1, 1.0)
        run.model(1.0, 8.0)
        model_end = gpu.host_ms
        first = index == 0
        run.clock.before_next(run.now_ns if first else 0, wire.F_EPOCH_START if first else 0, 0, 2, 2)
        run.host(val_wait_ms)
        run.clock.after_next([0] * 4)
        gpu.launch(6.0)
        run.host(0.2)
    steps = run.finish()[1:12]
    assert all(s.nested_pass for s in steps[:-1]) and len(steps) == len(spans) == 11
    for step, (begin, end) in zip(steps, spans, strict=True):
        assert step.gpu_gap_ms == pytest.approx(gpu.idle_ms(begin, end), abs=1e-5)
        assert step.gpu_gap_ms < end - begin - 6.0


def test_a_pass_left_without_its_last_next_leaves_its_kernels_out(run: GpuLoop, gpu: FakeCuda) -> None:
    # `for v in islice(val, 3)` after the model: no StopIteration next(); the last batch's kernels are
    # queued after the mark, which moves when the training loader's next() ends the pass.
    model_end, spans = 0.0, []
    for index in range(8):
        run.next_batch(20.0, source=1)
        if index == 4:
            spans.append((model_end, gpu.host_ms))
        run.copy(0.1, 1.0)
        run.model(1.0, 8.0)
        model_end = gpu.host_ms
        run.sync()
        if index == 3:
            for batch in range(3):
                first = batch == 0
                run.clock.before_next(run.now_ns if first else 0, wire.F_EPOCH_START if first else 0, 0, 2, 2)
                run.host(0.5)
                run.clock.after_next([0] * 4)
                gpu.launch(5.0)
                run.host(0.2)
    steps = run.finish()
    (after,) = [s for s in steps if s.step > 0 and steps[s.step - 1].nested_pass]
    ((begin, end),) = spans
    assert after.gpu_gap_ms == pytest.approx(gpu.idle_ms(begin, end), abs=1e-5)


def test_a_gap_asked_at_the_close_of_a_step_with_a_pass_stays_within_its_span(
    run: GpuLoop, gpu: FakeCuda
) -> None:
    # A step whose model's end is seen but not its first work (data already on the GPU, raw tensors):
    # its own gap is asked at its close, after its pass. The pass's pieces belong to no later gap then.
    for _ in range(5):
        run.next_batch(5.0, source=1)
        run.copy(0.1, 1.0)
        run.model(1.0, 8.0)
        run.sync()
    began = gpu.host_ms
    run.next_batch(5.0, source=1)
    gpu.launch(8.0)
    run.host(1.0)
    run.clock.work.model_ended()  # a backward seen, no model call nor copy before it
    run.sync()
    run.validation_pass(2, 12.0, gpu_ms=3.0)
    run.sync()
    run.next_batch(5.0, source=1)
    closed = gpu.host_ms - 5.0
    run.copy(0.1, 1.0)
    run.model(1.0, 8.0)
    steps = {s.step: s for s in run.finish()}
    gap = steps[5].gpu_gap_ms
    assert gap is not None and gap <= closed - began  # (the pieces once counted twice: 61 ms in 47)


def _validate(loop: GpuLoop) -> None:
    """A 4-batch validation pass (3 ms to load each batch in the process, 1 ms of kernels each),
    `float(correct)` at its end, 0.3 ms of logging."""
    loop.validation_pass(4, 3.0, gpu_ms=1.0)
    loop.sync()
    loop.host(0.3)


def _save(loop: GpuLoop) -> None:
    """torch.save of the weights: 2 ms of copies to the host, which wait for the queue, then 8 ms of
    writing."""
    loop.clock.work.checkpointed()
    loop.gpu.launch(2.0)
    loop.sync()
    loop.host(8.0)
    loop.clock.work.checkpoint_saved()


def _train_with(
    loop: GpuLoop, host_ms: float, gpu_ms: float, periodic: Callable[[GpuLoop], None] | None
) -> float:
    """40 training steps (``host_ms`` of the model's calls queueing ``gpu_ms`` of kernels, no sync),
    ``periodic`` work after every tenth's model, then the loop's end and a final sync. Returns the host
    time it all took."""
    began = loop.gpu.host_ms
    for index in range(40):
        loop.next_batch(0.2, source=1)
        loop.copy(0.1, 0.5)
        loop.model(host_ms, gpu_ms)
        if periodic is not None and index % 10 == 9:
            periodic(loop)
    loop.clock.before_next()
    loop.sync()
    return loop.gpu.host_ms - began


@pytest.mark.parametrize("periodic", [_validate, _save])
@pytest.mark.parametrize(("host_ms", "gpu_ms"), [(1.0, 6.0), (8.0, 2.0)])
def test_periodic_work_is_timed_on_the_gpus_clock_at_what_it_adds_to_the_job(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    host_ms: float,
    gpu_ms: float,
    periodic: Callable[[GpuLoop], None],
) -> None:
    # (1.0, 6.0): the host runs ahead, 50 ms of training kernels queued when each pass or save begins,
    # and its sync waits for them: its host wall is mostly the training's (session 45's k on an H100, 46%
    # read where its passes cost little). (8.0, 2.0): the GPU waits for the host, and the work's cost is
    # its host time. Either way the truth is the time the same loop takes without it, less.
    without = _train_with(GpuLoop(tmp_path / "a", monkeypatch, FakeCuda(), True), host_ms, gpu_ms, None)
    loop = GpuLoop(tmp_path / "b", monkeypatch, FakeCuda(), True)
    added = _train_with(loop, host_ms, gpu_ms, periodic) - without
    steps = loop.finish()
    held = [s for s in steps if s.nested_pass or s.checkpoint]
    assert len(held) == 4 and all(s.periodic_gpu_ms is not None for s in held)
    assert sum(s.periodic_gpu_ms or 0.0 for s in held) == pytest.approx(added, abs=4 * 0.25)
    typical = sorted(s.wall_ms for s in steps)[len(steps) // 2]
    if gpu_ms > host_ms:  # the host wall beyond a typical step holds the queue the sync drained
        assert sum(s.wall_ms - typical for s in held) > 3 * added
    stats = window_stats(steps, window_steps=40, warmup_steps=0)
    assert stats is not None
    share = stats.nested_pass_share if periodic is _validate else stats.checkpoint_share
    assert share == pytest.approx(added / stats.wall_ms_total, abs=0.02)


def test_a_step_holding_a_pass_and_a_checkpoint_is_not_timed(run: GpuLoop) -> None:
    # One span cannot say which of the two cost what: the analysis splits such a step's wall by what
    # each costs alone (analysis/steps.py _periodic_parts).
    _train_with(run, 1.0, 6.0, lambda loop: (_validate(loop), _save(loop)))
    held = [s for s in run.finish() if s.nested_pass or s.checkpoint]
    assert len(held) == 4 and all(s.nested_pass and s.checkpoint for s in held)
    assert all(s.periodic_gpu_ms is None for s in held)


def test_a_pass_still_running_on_the_gpu_is_read_again_until_its_time_is_patched_in(
    run: GpuLoop, gpu: FakeCuda
) -> None:
    # No sync in the pass: when the training loader's next() ends it, its two batches' kernels wait
    # behind 150 ms of training kernels. The viewer reads the step pending, then its time once resolved.
    for _ in range(5):
        run.next_batch(0.2, source=1)
        run.copy(0.1, 0.5)
        run.model(1.0, 30.0)
    run.validation_pass(2, 1.0, gpu_ms=1.5)
    run.next_batch(0.2, source=1)  # closes the step that held the pass
    assert run.clock.writer is not None
    reader = RingReader(run.clock.writer.path)
    reader.poll()
    (held,) = [s for s in reader.steps if s.nested_pass]
    assert held.periodic_gpu_ms is None
    run.host(1_000)
    run.clock.resolve_pending()
    reader.poll()
    (held,) = [s for s in reader.steps if s.nested_pass]
    reader.close()
    assert held.periodic_gpu_ms == _ms(3.0)  # its kernels, back to back behind the training's


# -- epochs ------------------------------------------------------------------------------------------------
def test_an_epochs_first_step_is_charged_only_its_own_wait_of_the_gpus_idle_between_epochs(
    plain: GpuLoop, gpu: FakeCuda
) -> None:
    # A 500 ms checkpoint between epochs is no step's: the GPU idles through it, and the new epoch's first
    # step's gap says so, but its wall holds only its 50 ms wait (worker start-up), and the analysis
    # charges the step no more of the gap than that wait.
    for _ in range(10):
        plain.next_batch(1.0)
        plain.copy(0.0, 1.0, seen=False)
        plain.model(0.5, 10.0)
        plain.host(11.0)
    plain.clock.before_next()  # the epoch's last next(): StopIteration follows, the step is closed
    plain.host(500.0)  # checkpoint
    began = plain.now_ns
    plain.host(50.0)  # iter(loader): workers start
    plain.clock.before_next(began, wire.F_EPOCH_START | wire.F_WORKERS_STARTED, 50 * MS)
    plain.clock.after_next([0] * 4)
    plain.model(10.5, 10.0)
    steps = plain.finish()
    first = steps[-1]
    assert first.epoch_start and first.workers_started
    assert first.data_wait_ms == pytest.approx(50.0) and first.wall_ms == pytest.approx(60.5)
    assert first.gpu_gap_ms == _ms(550.0)  # the GPU's own idle: checkpoint and worker start
    idle = attribute_idle(steps, newest=1)
    assert idle is not None
    assert idle.total * first.wall_ms == pytest.approx(50.0)  # the wait; the checkpoint is no step's


def test_an_iterator_made_long_before_its_first_next_adds_only_its_own_time(plain: GpuLoop) -> None:
    made = plain.now_ns
    plain.host(1.0)  # iter(val_loader) at setup: 1 ms
    for _ in range(5):
        _starved_step(plain, wait_ms=1.0)
    plain.clock.before_next()  # the training epoch ends
    plain.host(1200.0)  # anything between
    plain.clock.before_next(made, wire.F_EPOCH_START, 1 * MS)  # the validation pass's first next()
    plain.clock.after_next([0] * 4)
    plain.host(5.0)
    first = next(s for s in plain.finish() if s.epoch_start)
    assert first.data_wait_ms == pytest.approx(1.0, abs=0.1)
