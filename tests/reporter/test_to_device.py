"""to_device moves nested batches like .to() would, and notes what each step copied."""

from __future__ import annotations

import time
from collections import UserDict, namedtuple
from pathlib import Path

import torch
from torch.nn.utils.rnn import PackedSequence, pack_sequence

import xfertop
from ring_test_tools import run_under_xfertop
from xfertop.model.jobs import StepRecord
from xfertop.reporter._clock import StepClock
from xfertop.sources.jobs.ring_reader import RingReader

Pair = namedtuple("Pair", "inputs labels")


def _steps(clock: StepClock) -> list[StepRecord]:
    assert clock.writer is not None
    reader = RingReader(clock.writer.path)
    reader.poll()
    return list(reader.steps)


def test_nested_batches_keep_their_shape_and_count_every_tensor(fresh_clock: StepClock) -> None:
    batch = {
        "pair": Pair(torch.ones(4, 3), torch.zeros(4, dtype=torch.long)),
        "extra": [torch.ones(2), "caption", 7],
        "mask": (torch.ones(4),),
    }
    for _ in xfertop.watch(range(2)):
        moved = xfertop.to_device(batch, "meta", non_blocking=False)
    assert isinstance(moved["pair"], Pair) and moved["pair"].labels.device.type == "meta"
    assert moved["extra"][1:] == ["caption", 7] and isinstance(moved["mask"], tuple)
    first = _steps(fresh_clock)[0]
    assert first.h2d_bytes == 4 * 3 * 4 + 4 * 8 + 2 * 4 + 4 * 4
    assert first.samples == 0  # the batch of this loop is the range's int
    assert not first.pinned and not first.pageable_non_blocking  # pageable, but non_blocking was not asked


def test_copies_to_the_cpu_are_not_host_to_device(fresh_clock: StepClock) -> None:
    for batch in xfertop.watch([torch.ones(8, 2)] * 3):
        xfertop.to_device(batch, "cpu")
    steps = _steps(fresh_clock)
    assert [s.samples for s in steps] == [8, 8, 8]
    assert all(s.h2d_bytes == 0 and not s.pinned and not s.pageable_non_blocking for s in steps)


def test_mark_copied_alone_moves_nothing_and_raises_nothing(fresh_clock: StepClock) -> None:
    for _ in xfertop.watch(range(3)):
        xfertop.mark_copied()
        xfertop.mark_copied("meta")
    assert fresh_clock.errors == 0 and len(_steps(fresh_clock)) == 3


def test_a_step_block_inside_a_watched_loop_leaves_the_boundaries_to_the_loop(fresh_clock: StepClock) -> None:
    for _ in xfertop.watch(range(4)):
        with xfertop.step(), xfertop.step():
            pass
    assert [s.step for s in _steps(fresh_clock)] == [0, 1, 2, 3]
    with xfertop.step():  # nested blocks on their own: the outermost is the step
        with xfertop.step():
            pass
        busy_until = time.perf_counter() + 0.005
        while time.perf_counter() < busy_until:
            pass
    steps = _steps(fresh_clock)
    assert len(steps) == 5 and steps[-1].wall_ms >= 5.0 and fresh_clock.errors == 0


class _PointTuple(tuple):  # a tuple subclass whose constructor does not take one iterable
    def __new__(cls, x: object, y: object) -> _PointTuple:
        return super().__new__(cls, (x, y))


def test_a_tuple_subclass_that_cannot_be_rebuilt_still_moves_and_never_raises(fresh_clock: StepClock) -> None:
    for _ in xfertop.watch(range(2)):
        moved = xfertop.to_device(_PointTuple(torch.ones(2), "label"), "meta")
    assert isinstance(moved, tuple) and moved[0].device.type == "meta" and moved[1] == "label"


def test_a_packed_sequence_moves_by_its_own_to_with_batch_sizes_left_on_the_cpu(
    fresh_clock: StepClock,
) -> None:
    packed = pack_sequence([torch.ones(3, 2), torch.ones(2, 2)])
    for _ in xfertop.watch(range(2)):
        moved = xfertop.to_device(packed, "meta")
    assert isinstance(moved, PackedSequence) and moved.data.device.type == "meta"
    assert moved.batch_sizes.device.type == "cpu"  # RNNs require it there
    assert _steps(fresh_clock)[0].h2d_bytes == packed.data.nbytes and fresh_clock.errors == 0


class _Encoding(UserDict):  # what a Hugging Face tokenizer returns (BatchEncoding): a Mapping, no dict
    pass


def test_samples_are_counted_in_a_mapping_batch_that_is_not_a_dict(fresh_clock: StepClock) -> None:
    for _ in xfertop.watch([_Encoding(input_ids=torch.ones(8, 16)), _Encoding(input_ids=torch.ones(8, 16))]):
        pass
    assert [s.samples for s in _steps(fresh_clock)] == [8, 8]


Edge = namedtuple("Edge", "source to")  # a field named `to` is no .to() method


def test_a_namedtuple_with_a_field_named_to_is_moved_field_by_field(fresh_clock: StepClock) -> None:
    for _ in xfertop.watch(range(2)):
        moved = xfertop.to_device(Edge(torch.ones(2), torch.zeros(2)), "meta")
    assert isinstance(moved, Edge) and moved.source.device.type == "meta" and moved.to.device.type == "meta"


class _Measured(tuple):  # a .to() of another meaning: unit conversion
    def to(self, unit: str) -> _Measured:
        return self


def test_a_tuple_whose_to_means_something_else_is_moved_field_by_field(fresh_clock: StepClock) -> None:
    for _ in xfertop.watch(range(2)):
        moved = xfertop.to_device(_Measured((torch.ones(2), "m")), "meta")
    assert isinstance(moved, _Measured) and moved[0].device.type == "meta" and moved[1] == "m"


TO_DEVICE_UNDER_RUN = """
import torch, xfertop
from torch.utils.data import DataLoader, TensorDataset
for (batch,) in xfertop.watch(DataLoader(TensorDataset(torch.ones(20 * 4, 8)), batch_size=4)):
    xfertop.to_device(batch, "meta")
"""


def test_to_device_under_xfertop_run_counts_each_copy_once(tmp_path: Path) -> None:
    # `xfertop run` times every Tensor.to, and to_device's own .to() calls are among them: the copy is
    # one copy, of 4 x 8 float32 a step, whoever saw it.
    _, (rank,) = run_under_xfertop(tmp_path, TO_DEVICE_UNDER_RUN)
    assert len(rank.steps) == 20
    assert [s.h2d_bytes for s in rank.steps] == [4 * 8 * 4] * 20
