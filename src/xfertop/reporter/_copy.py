"""to_device: move a nested batch (tensors in dicts, lists, tuples) and note what the copy was like."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any


class CopyNotes:
    """What a copy moved: host-to-device bytes and whether any source was pageable."""

    __slots__ = ("any_pageable", "h2d_bytes", "inspect_error", "pageable_non_blocking")

    def __init__(self) -> None:
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
        if not tensor.is_pinned():
            notes.any_pageable = True
            if non_blocking:
                notes.pageable_non_blocking = True
    except Exception as exc:
        notes.inspect_error = exc
