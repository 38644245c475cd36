"""Turning numbers into the short strings the panes show. Missing values read "n/a"."""

from __future__ import annotations

NA = "n/a"
_GB = 1e9


def gb(value_bytes: float | None, digits: int = 1) -> str:
    """Decimal gigabytes, the unit PCIe and GPU memory are usually quoted in."""
    if value_bytes is None:
        return NA
    return f"{value_bytes / _GB:.{digits}f}"


def human_bytes(value_bytes: float | None) -> str:
    """Short binary size for host memory: 512K, 3.2G."""
    if value_bytes is None:
        return NA
    size = float(value_bytes)
    for unit in ("B", "K", "M", "G", "T"):
        if abs(size) < 1024 or unit == "T":
            return f"{size:.0f}{unit}" if unit in ("B", "K") or size >= 100 else f"{size:.1f}{unit}"
        size /= 1024
    return NA  # unreachable: the loop returns at "T"


def percent(value: float | None, width: int = 3) -> str:
    if value is None:
        return NA.rjust(width)
    return f"{value:>{width}.0f}%"


def ms(value_ms: float | None) -> str:
    if value_ms is None:
        return NA
    if value_ms >= 100:
        return f"{value_ms:.0f}ms"
    return f"{value_ms:.1f}ms"


def rate_gb_per_s(value_bytes_per_s: float | None) -> str:
    if value_bytes_per_s is None:
        return NA
    return f"{value_bytes_per_s / _GB:.1f} GB/s"


def truncate(text: str, width: int) -> str:
    if width <= 0:
        return ""
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def samples_rate_text(samples_per_s: float) -> str:
    """Samples a second; n/a where none were counted (a loop without a DataLoader: steps, no batches)."""
    return f"{samples_per_s:.0f}" if samples_per_s > 0 else NA
