"""Text charts with a fixed scale: a PCIe chart is scaled to what the link can carry, not to its own peak,
so a flat line at 10% really means the link is mostly idle."""

from __future__ import annotations

from collections.abc import Sequence

_BLOCKS = " ▁▂▃▄▅▆▇█"
_LEVELS = len(_BLOCKS) - 1


def _fraction(value: float | None, scale_max: float) -> float:
    if value is None or scale_max <= 0:
        return 0.0
    return min(max(value / scale_max, 0.0), 1.0)


def spark(values: Sequence[float | None], scale_max: float, width: int) -> str:
    """One row of block characters, newest on the right, padded on the left to ``width``."""
    if width <= 0:
        return ""
    recent = values[-width:] if isinstance(values, list | tuple) else list(values)[-width:]
    blocks = _BLOCKS
    if scale_max <= 0:  # every value reads as 0: the lowest block for a non-zero one, else blank
        cells = [blocks[1] if value is not None and value > 0 else blocks[0] for value in recent]
    else:
        # round(fraction * levels), the fraction clamped to [0, 1]; a non-zero value never vanishes:
        # a trickle of traffic still shows as the lowest block.
        cells = [blocks[0] if value is None
                 else blocks[_LEVELS] if value >= scale_max
                 else blocks[max(round(value / scale_max * _LEVELS), 1)] if value > 0
                 else blocks[0]
                 for value in recent]
    return " " * (width - len(cells)) + "".join(cells)


def area(values: Sequence[float | None], scale_max: float, width: int, height: int) -> list[str]:
    """A multi-row chart (top row first) with eighth-block resolution per row."""
    if width <= 0 or height <= 0:
        return []
    recent = list(values)[-width:]
    pad = width - len(recent)
    rows: list[str] = []
    for row in range(height - 1, -1, -1):
        cells = [" "] * pad
        for value in recent:
            eighths = round(_fraction(value, scale_max) * height * _LEVELS) - row * _LEVELS
            cells.append(_BLOCKS[min(max(eighths, 0), _LEVELS)])
        rows.append("".join(cells))
    return rows


def bar(fraction: float | None, width: int) -> str:
    """A horizontal bar of ``width`` cells with eighth-cell resolution."""
    if width <= 0:
        return ""
    if fraction is None:
        return "·" * width
    eighths = round(min(max(fraction, 0.0), 1.0) * width * 8)
    full, rest = divmod(eighths, 8)
    partial = "▏▎▍▌▋▊▉"[rest - 1] if rest else ""
    return ("█" * full + partial).ljust(width)


def stacked(shares: Sequence[tuple[float, str]], width: int) -> list[tuple[str, str]]:
    """Cells of a stacked bar as (text, style) pieces; shares are fractions of the whole, in order.

    Shares summing above 1 (CPU and GPU clocks overlap) are scaled down to fit.
    """
    total = sum(max(share, 0.0) for share, _ in shares)
    scale = 1.0 / total if total > 1.0 else 1.0
    pieces, used = [], 0
    for share, style in shares:
        cells = round(max(share, 0.0) * scale * width)
        cells = min(cells, width - used)
        if cells > 0:
            pieces.append(("█" * cells, style))
            used += cells
    if used < width:
        pieces.append(("·" * (width - used), "dim"))
    return pieces
