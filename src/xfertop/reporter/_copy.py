"""to_device: move a nested batch (tensors in dicts, lists, tuples) and note what the copy was like."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any


class PinnedMemo:
    """Whether a host tensor is pinned, remembered by its address until the next ``clear()``.

    ``Tensor.is_pinned()`` asks the CUDA driver. Alone it costs ~0.6 us, but inside a loop whose DataLoader
    pins batches in its pin-memory thread it took ~7 us of CPU and ~13 us of wall a call on the H200
    (docs/measurements/h200-2026-12-03-s21): the largest single cost of copy timing. A training loop copies
    from the same few buffers step after step (the caching host allocator hands its pinned blocks out
    again), so the answer is remembered by the tensor's data pointer. An address can change hands (freed,
    then mapped again by an allocation of the other kind), so the step clock that owns the memo clears it
    once a second: a stale answer stands for a second at most. ``LIMIT`` bounds it for loops that copy
    from ever new addresses.
    """

    __slots__ = ("known",)
    LIMIT = 4096

    def __init__(self) -> None:
        #: Answers by data pointer: a caller on the hot path may read it in place (StepWork.tensor_moved)
        #: and ask ``pinned`` only on a miss.
        self.known: dict[int, bool] = {}

    def pinned(self, tensor: Any) -> bool:
        known = self.known
        try:
            address = tensor.data_ptr()
        except Exception:  # no storage to point at (a fake tensor while torch.compile traces): just ask
            return bool(tensor.is_pinned())
        answer = known.get(address)
        if answer is None:
            if len(known) >= self.LIMIT:
                known.clear()
            answer = known[address] = bool(tensor.is_pinned())
        return answer

    def clear(self) -> None:
        self.known.clear()


class CopyNotes:
    """What a copy moved: host-to-device bytes and whether any source was pageable (asked of ``pinned``,
    the step clock's memo)."""

    __slots__ = ("any_pageable", "h2d_bytes", "inspect_error", "pageable_non_blocking", "pinned")

    def __init__(self, pinned: PinnedMemo) -> None:
        self.pinned = pinned
        self.h2d_bytes = 0
        self.any_pageable = False
        self.pageable_non_blocking = False
        self.inspect_error: Exception | None = None


def move(
    batch: Any,
    device: Any,
    non_blocking: bool,
    notes: CopyNotes | None,
    tensor_type: type[Any],
    to_host: bool,
) -> Any:
    """``batch`` with every tensor moved to ``device``; containers keep their type; other leaves stay.

    ``to_host`` says the target is the CPU (then nothing is a host-to-device copy).
    """
    if isinstance(batch, tensor_type):
        if notes is not None and not to_host:
            note_copy(batch, non_blocking, notes)
        return batch.to(device, non_blocking=non_blocking)
    if isinstance(batch, Mapping):
        moved = {
            key: move(value, device, non_blocking, notes, tensor_type, to_host)
            for key, value in batch.items()
        }
        mapping_type: Any = type(batch)  # any Mapping: its constructor may not take a dict (TypeError)
        try:
            return mapping_type(moved)
        except TypeError:
            return moved
    if isinstance(batch, tuple):
        packed_type = getattr(sys.modules.get("torch.nn.utils.rnn"), "PackedSequence", None)
        if packed_type is not None and isinstance(batch, packed_type):  # its own .to keeps batch_sizes
            moved_tuple = batch.to(device, non_blocking=non_blocking)
            if notes is not None and not to_host:
                try:
                    for before, after in zip(batch, moved_tuple, strict=False):
                        if after is not before and isinstance(before, tensor_type):
                            note_copy(before, non_blocking, notes)
                except Exception as exc:
                    notes.inspect_error = exc
            return moved_tuple
        items = [move(value, device, non_blocking, notes, tensor_type, to_host) for value in batch]
        try:
            return type(batch)(*items) if hasattr(batch, "_fields") else type(batch)(items)
        except TypeError:  # a constructor of its own: a plain tuple, as for mappings above
            return tuple(items)
    if isinstance(batch, list):
        return [move(value, device, non_blocking, notes, tensor_type, to_host) for value in batch]
    return batch


def note_copy(tensor: Any, non_blocking: bool, notes: CopyNotes) -> None:
    """Account one tensor about to go from the host to a device (no-op for tensors not on the CPU)."""
    # Our own inspection must never break the user's copy: a failure is remembered, not raised.
    try:
        if not tensor.is_cpu:
            return
        notes.h2d_bytes += tensor.nbytes
        if not notes.pinned.pinned(tensor):
            notes.any_pageable = True
            if non_blocking:
                notes.pageable_non_blocking = True
    except Exception as exc:
        notes.inspect_error = exc
