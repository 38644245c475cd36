"""to_device: move a nested batch (tensors in dicts, lists, tuples) and note what the copy was like."""

from __future__ import annotations

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


def move(batch: Any, device: Any, non_blocking: bool, notes: CopyNotes | None) -> Any:
    """``batch`` with every tensor moved to ``device``; containers keep their type; other leaves stay."""
    to = getattr(batch, "to", None)
    if to is not None and hasattr(batch, "is_pinned"):
        if notes is not None:
            note_copy(batch, device, non_blocking, notes)
        return to(device, non_blocking=non_blocking)
    if isinstance(batch, Mapping):
        moved = {key: move(value, device, non_blocking, notes) for key, value in batch.items()}
        try:
            return type(batch)(moved)
        except TypeError:
            return moved
    if isinstance(batch, tuple):
        items = [move(value, device, non_blocking, notes) for value in batch]
        return type(batch)(*items) if hasattr(batch, "_fields") else type(batch)(items)
    if isinstance(batch, list):
        return [move(value, device, non_blocking, notes) for value in batch]
    return batch


def note_copy(tensor: Any, device: Any, non_blocking: bool, notes: CopyNotes) -> None:
    # Our own inspection must never break the user's copy: a failure is remembered, not raised.
    try:
        if tensor.device.type != "cpu" or device.type == "cpu":
            return
        notes.h2d_bytes += tensor.nbytes
        if not tensor.is_pinned():
            notes.any_pageable = True
            if non_blocking:
                notes.pageable_non_blocking = True
    except Exception as exc:
        notes.inspect_error = exc
