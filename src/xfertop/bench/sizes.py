"""Sizes on the command line ("64KiB", "1GiB") and the sweep plan."""

from __future__ import annotations

import re

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB
_UNITS = {
    "": 1,
    "b": 1,
    "k": KIB,
    "kib": KIB,
    "m": MIB,
    "mib": MIB,
    "g": GIB,
    "gib": GIB,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
}
#: The sweep (case f): 64 KiB to 1 GiB, every factor of 4.
SWEEP_MIN_BYTES = 64 * KIB
SWEEP_MAX_BYTES = GIB
SWEEP_FACTOR = 4


def parse_size(text: str) -> int:
    """'64KiB' -> 65536; binary units for K/M/G and KiB/MiB/GiB, decimal for KB/MB/GB."""
    match = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", text)
    if not match or match.group(2).lower() not in _UNITS:
        raise ValueError(f"not a size: {text!r} (try 64KiB, 256MiB, 1GiB)")
    size = int(match.group(1)) * _UNITS[match.group(2).lower()]
    if size <= 0:
        raise ValueError(f"size must be positive: {text!r}")
    return size


def format_size(size_bytes: int) -> str:
    for unit, scale in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if size_bytes >= scale and size_bytes % scale == 0:
            return f"{size_bytes // scale} {unit}"
    return f"{size_bytes} B"


def sweep_plan(
    min_bytes: int = SWEEP_MIN_BYTES,
    max_bytes: int = SWEEP_MAX_BYTES,
    factor: int = SWEEP_FACTOR,
    fit_bytes: int | None = None,
) -> tuple[int, ...]:
    """Sizes from min to max by `factor`, max included; sizes above fit_bytes (a memory budget) dropped."""
    if min_bytes <= 0 or max_bytes < min_bytes or factor < 2:
        raise ValueError(f"bad sweep: {min_bytes}..{max_bytes} by x{factor}")
    sizes = []
    size = min_bytes
    while size < max_bytes:
        sizes.append(size)
        size *= factor
    sizes.append(max_bytes)
    return tuple(s for s in sizes if fit_bytes is None or s <= fit_bytes)
