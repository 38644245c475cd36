"""Snapshots as plain JSON-ready values: the one converter the JSON export and the bench protocol share."""

from __future__ import annotations

import dataclasses
from typing import Any


def to_plain(value: Any) -> Any:
    """Dataclasses to dicts, tuples and lists to lists, dict keys to strings; other values as they are."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [to_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): to_plain(item) for key, item in value.items()}
    return value
