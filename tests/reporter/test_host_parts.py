"""The host's step in six parts: one step's marks on their own (StepWork), then through the step clock
into the ring.

A step's wall is its wait in next(), the loop's own work before the model (batch arrived -> first copy or
model call), its copies, the model, its syncs and the loop's own work after the model's last backward or
optimizer step; the model is what the others leave. Time here is a fake host clock, so every part is
exact.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

import xfertop.reporter as reporter
from ring_test_tools import book_timed_copy, fake_clock_time
from xfertop import wire
from xfertop.model.jobs import StepRecord
from xfertop.reporter._clock import StepClock
from xfertop.reporter._copy import PinnedMemo
from xfertop.reporter._gpu_gap import GpuGap
from xfertop.reporter._identity import current_identity
from xfertop.reporter._ring_writer import RingWriter
from xfertop.reporter._step_work import StepWork
from xfertop.sources.jobs.ring_reader import RingReader

MS = 1_000_000
T0 = 10**12  # the fake host clock's start (perf_counter_ns is never 0 either)


# -- the marks of one step on their own -------------------------------------------------------------------
class Marks:
    """One open step's work (no GPU, no ring) on a fake host clock, told what happens by its hooks."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now_ns = T0
        fake_clock_time(monkeypatch, lambda: self.now_ns)
        self.work = StepWork(GpuGap(), _raise, lambda _device: None, PinnedMemo())
        self.work.opened(0, T0)

    def at(self, ms: float) -> StepWork:
        """The step's work, ``ms`` after its batch arrived."""
        self.now_ns = T0 + round(ms * MS)
        return self.work

    def loop_ns_at_close(self, ms: float) -> tuple[int, int]:
        return self.work.loop_ns(T0 + round(ms * MS))


def _raise(exc: BaseException) -> None:
    raise exc  # a hook's own error fails the test (the clock would count it and go on)


def _copied(work: StepWork, copy_ms: float) -> None:
    work.copied(4096, False, False, round(copy_ms * MS), None)  # a copy of copy_ms that ends now


def test_a_step_in_which_nothing_was_seen_has_no_loop_work(monkeypatch: pytest.MonkeyPatch) -> None:
    step = Marks(monkeypatch)
    assert step.loop_ns_at_close(50) == (0, 0) and step.work.sync_ns == 0


def test_the_loop_work_before_the_model_ends_at_the_steps_first_work(monkeypatch: pytest.MonkeyPatch) -> None:
    step = Marks(monkeypatch)
    step.at(12).starting()  # the batch's copy, after 12 ms of augmenting
    step.at(15).starting()  # the model's call: not the first work any more
    assert step.work.first_work_ns == T0 + 12 * MS and not step.work.awaits_first_work
    assert step.loop_ns_at_close(20) == (12 * MS, 0)


def test_a_copy_marked_by_the_loop_starts_the_work_where_it_began(monkeypatch: pytest.MonkeyPatch) -> None:
    step = Marks(monkeypatch)
    _copied(step.at(12), copy_ms=4)  # to_device says so when the copy has ended, 8 ms in
    assert step.loop_ns_at_close(20) == (8 * MS, 0) and step.work.copy_cpu_ns == 4 * MS


def test_a_sync_before_the_first_work_is_not_loop_work(monkeypatch: pytest.MonkeyPatch) -> None:
    step = Marks(monkeypatch)
    step.at(3).synced(3 * MS)  # a .item() on the last step's loss, logged at the top of the loop
    step.at(10).starting()
    step.at(14).synced(4 * MS)  # a sync inside the model: neither loop part's
    assert step.loop_ns_at_close(20)[0] == 7 * MS
    assert step.work.sync_ns == 7 * MS


class ReadyAt:
    """The loop thread's ready time as the scheduler would give it (the OS boundary): set by the test."""

    def __init__(self) -> None:
        self.ns = 1

    def ready_ns(self) -> int:
        return self.ns


def test_a_sampled_steps_blocked_parts_leave_out_their_syncs(monkeypatch: pytest.MonkeyPatch) -> None:
    # Sampled (the clock set ready_at_open): before the model a 10 ms sync spinning on its CPU (CUDA's
    # default wait), then 3 ms blocked in a queue's get(); after the step 5 ms blocked in a sleep, then a
    # 20 ms loss.item() spinning. The loop's parts are the 3 and 5 ms (loop_ns), both blocked throughout:
    # with the syncs in their spans they read 3 of 13 and 5 of 25 blocked.
    step = Marks(monkeypatch)
    ready = ReadyAt()
    step.work.ready = ready  # type: ignore[assignment]
    step.work.ready_at_open = ready.ns
    ready.ns += 10 * MS
    step.at(10).synced(10 * MS)
    step.at(13).starting()  # the model's first call
    ready.ns += 7 * MS
    step.at(20).model_ended()  # 7 ms of the model on its CPU
    ready.ns += 20 * MS
    step.at(45).synced(20 * MS)  # after the 5 ms sleep
    assert step.loop_ns_at_close(45) == (3 * MS, 5 * MS)
    assert step.work.sampled_parts(T0 + 45 * MS) == ((3 * MS, 0), (5 * MS, 0))


def test_the_loop_work_after_the_step_starts_at_the_models_last_end(monkeypatch: pytest.MonkeyPatch) -> None:
    step = Marks(monkeypatch)
    step.at(1).starting()
    step.at(5).model_ended()  # the forward
    step.at(12).model_ended()  # the backward
    step.at(14).model_ended()  # the optimizer step: the last one counts
    assert step.loop_ns_at_close(20) == (1 * MS, 6 * MS)


def test_copies_and_syncs_after_the_model_are_their_own_parts_not_loop_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    step = Marks(monkeypatch)
    step.at(1).starting()
    _copied(step.at(2), copy_ms=1)  # the batch's copy
    step.at(6).synced(2 * MS)  # inside the model
    step.at(10).model_ended()
    step.at(15).synced(5 * MS)  # loss.item() for the log line
    _copied(step.at(25), copy_ms=3)  # a metric moved to the GPU after the step
    assert step.loop_ns_at_close(30) == (1 * MS, (30 - 10 - 5 - 3) * MS)
    assert step.work.sync_after_model_ns() == 5 * MS


def test_no_part_is_ever_negative(monkeypatch: pytest.MonkeyPatch) -> None:
    step = Marks(monkeypatch)
    step.at(1).synced(5 * MS)
    step.at(2).starting()  # the sync's own measurement ran longer than the gap it sits in
    step.at(3).model_ended()
    step.at(3).synced(9 * MS)
    assert step.loop_ns_at_close(4) == (0, 0)


def test_opening_a_step_forgets_the_last_steps_marks(monkeypatch: pytest.MonkeyPatch) -> None:
    step = Marks(monkeypatch)
    step.at(1).starting()
    step.at(1).synced(1 * MS)
    _copied(step.at(2), copy_ms=1)
    step.at(2).model_ended()
    step.at(10).opened(1, T0 + 10 * MS)
    work = step.work
    assert (work.first_work_ns, work.model_end_ns, work.sync_ns, work.copy_cpu_ns, work.h2d_bytes) == (0,) * 5
    assert work.awaits_first_work and step.loop_ns_at_close(20) == (0, 0)
    step.at(13).starting()
    assert step.loop_ns_at_close(20) == (3 * MS, 0)


def test_a_joining_batch_moves_the_start_of_the_loops_own_work(monkeypatch: pytest.MonkeyPatch) -> None:
    step = Marks(monkeypatch)
    step.at(1).synced(1 * MS)
    step.work.marks_from(T0 + 5 * MS)  # the second loader's batch arrived 5 ms in
    step.at(9).starting()
    assert step.loop_ns_at_close(20) == (4 * MS, 0) and step.work.sync_ns == 0


# -- through the step clock (no GPU) ---------------------------------------------------------------------
class HostLoop:
    """Drives a step clock the way `xfertop run`'s hooks do, on a fake host clock."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, partitioning: bool) -> None:
        self.now_ns = T0
        fake_clock_time(monkeypatch, lambda: self.now_ns)
        self.clock = StepClock(lambda: RingWriter(str(tmp_path), current_identity()))
        self.clock.partitioning = partitioning

    def host(self, ms: float) -> None:
        self.now_ns += round(ms * MS)

    def next_batch(self, wait_ms: float) -> None:
        self.clock.before_next()
        self.host(wait_ms)
        self.clock.after_next([_Batch()])

    def copy(self, ms: float, seen: bool = True) -> None:
        """A copy to the device of ``ms`` host time: seen by copy timing (which says work starts before
        it), or marked by the loop after it (to_device, mark_copied)."""
        if seen:
            self.clock.work.starting()
        self.host(ms)
        if seen:  # copy timing books it as `xfertop run`'s Tensor.to wrapper does
            book_timed_copy(self.clock.work, 4096, round(ms * MS))
        else:
            self.clock.work.copied(4096, False, False, round(ms * MS), None)

    def model_call(self, ms: float) -> None:
        self.clock.work.starting()
        self.host(ms)
        # The forward's end; a backward or optimizer step after it moves the mark.
        self.clock.work.model_ended()

    def model_part(self, ms: float) -> None:
        """A backward or an optimizer step."""
        self.host(ms)
        self.clock.work.model_ended()

    def sync(self, ms: float) -> None:
        self.host(ms)
        self.clock.work.synced(round(ms * MS))

    def steps(self) -> list[StepRecord]:
        self.clock.before_next()  # closes the last step
        assert self.clock.writer is not None and self.clock.errors == 0, self.clock.last_error
        reader = RingReader(self.clock.writer.path)
        reader.poll()
        steps = list(reader.steps)
        reader.close()
        return steps


class _Batch:
    shape = (8, 3)
    is_cuda = False


def _parts(step: StepRecord) -> tuple[float, ...]:
    return (
        step.data_wait_ms,
        step.loop_pre_ms,
        step.copy_cpu_ms,
        step.model_ms,
        step.sync_ms,
        step.loop_post_ms,
    )


def test_a_step_under_xfertop_run_is_split_into_six_parts_that_add_up_to_its_wall(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop = HostLoop(tmp_path, monkeypatch, partitioning=True)
    for _ in range(3):
        loop.next_batch(wait_ms=5)
        loop.host(12)  # augmenting on the CPU in the loop
        loop.copy(2)
        loop.model_call(3)  # forward
        loop.sync(4)  # loss.item() to decide whether to skip the step
        loop.model_part(6)  # backward
        loop.model_part(1)  # optimizer step
        loop.host(7)  # logging, metrics
    steps = loop.steps()
    assert len(steps) == 3
    for step in steps:
        assert step.wall_ms == pytest.approx(40.0)
        assert _parts(step) == pytest.approx((5.0, 12.0, 2.0, 10.0, 4.0, 7.0))
        assert sum(_parts(step)) == pytest.approx(step.wall_ms)
        assert step.partitioned and step.synced and step.copied and step.h2d_bytes == 4096


def test_a_copy_marked_by_the_loop_ends_the_loop_work_where_the_copy_began(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop = HostLoop(tmp_path, monkeypatch, partitioning=False)  # plain xfertop.watch + to_device
    loop.next_batch(wait_ms=1)
    loop.host(9)  # tokenising
    loop.copy(3, seen=False)  # to_device tells the clock after the copy, with its host time
    loop.host(20)  # the model: its calls are not watched
    [step] = loop.steps()
    assert _parts(step) == pytest.approx((1.0, 9.0, 3.0, 20.0, 0.0, 0.0))
    assert not step.partitioned and not step.synced


def test_without_the_models_calls_seen_the_step_is_not_partitioned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `xfertop run` watches the model, but this step did no copy and called no model (an evaluation step
    # the hooks missed): its host time after the wait is the model's, and the step says it was not split.
    loop = HostLoop(tmp_path, monkeypatch, partitioning=True)
    loop.next_batch(wait_ms=2)
    loop.host(10)
    [step] = loop.steps()
    assert not step.partitioned
    assert _parts(step) == pytest.approx((2.0, 0.0, 0.0, 10.0, 0.0, 0.0))


def test_a_sync_between_steps_belongs_to_no_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loop = HostLoop(tmp_path, monkeypatch, partitioning=True)
    loop.next_batch(wait_ms=1)
    loop.model_call(4)
    loop.clock.before_next()  # the epoch ends: no step is open
    loop.sync(50)  # a validation loss .item() outside any step
    loop.next_batch(wait_ms=1)
    loop.model_call(4)
    first, second = loop.steps()
    assert first.sync_ms == second.sync_ms == 0.0
    assert not (first.synced or second.synced)


def test_the_ring_flags_say_which_steps_synced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loop = HostLoop(tmp_path, monkeypatch, partitioning=True)
    for index in range(4):
        loop.next_batch(wait_ms=1)
        loop.model_call(4)
        if index % 2:
            loop.sync(0.5)
    steps = loop.steps()
    assert [s.synced for s in steps] == [False, True, False, True]
    assert [s.sync_ms for s in steps] == pytest.approx([0.0, 0.5, 0.0, 0.5])
    assert all(s.partitioned for s in steps)


def test_the_wire_flags_for_the_parts_are_distinct() -> None:
    flags = [
        wire.F_PINNED,
        wire.F_PAGEABLE_NON_BLOCKING,
        wire.F_GPU_PENDING,
        wire.F_GPU_RESOLVED,
        wire.F_GPU_DROPPED,
        wire.F_COPIED,
        wire.F_EPOCH_START,
        wire.F_WORKERS_STARTED,
        wire.F_CHECKPOINT,
        wire.F_PARTITIONED,
        wire.F_SYNCED,
    ]
    assert len(set(flags)) == len(flags) and all(flag & (flag - 1) == 0 for flag in flags)


# -- the reporter's entry points for `xfertop run`'s hooks -----------------------------------------------
def test_the_hooks_of_xfertop_run_mark_the_open_step(
    fresh_clock: StepClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [T0]
    fake_clock_time(monkeypatch, lambda: now[0])
    fresh_clock.partitioning = True
    cuda_loss = SimpleNamespace(is_cuda=True, is_cpu=False)
    on_host = SimpleNamespace(is_cpu=True, device=SimpleNamespace(type="cpu"))
    assert reporter.open_step() is None  # no step yet
    fresh_clock.before_next()
    now[0] += 1 * MS
    fresh_clock.after_next([_Batch()])
    assert reporter.open_step() == 0
    now[0] += 5 * MS  # the loop's own work
    reporter.note_work_starting()  # the model's first call
    now[0] += 3 * MS
    reporter.note_model_ended()  # the optimizer step's end
    now[0] += 2 * MS
    # loss.to("cpu"), as copy timing sees it: the loop waits for the GPU
    fresh_clock.work.tensor_moved(cuda_loss, on_host, False, 2 * MS)
    reporter.note_sync(1 * MS)  # loss.item()
    now[0] += 1 * MS
    now[0] += 4 * MS  # logging
    fresh_clock.before_next()
    assert reporter.open_step() is None  # between steps
    assert fresh_clock.writer is not None
    reader = RingReader(fresh_clock.writer.path)
    reader.poll()
    [step] = reader.steps
    reader.close()
    assert _parts(step) == pytest.approx((1.0, 5.0, 0.0, 3.0, 3.0, 4.0))
    assert step.partitioned and step.synced and step.h2d_bytes == 0
