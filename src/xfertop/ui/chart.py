"""Text charts with a fixed scale: a PCIe chart is scaled to what the link can carry, not to its own peak,
so a flat line at 10% really means the link is mostly idle."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xfertop.analysis.advice import largest_remainder

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
        cells = [
            blocks[0]
            if value is None
            else blocks[_LEVELS]
            if value >= scale_max
            else blocks[max(round(value / scale_max * _LEVELS), 1)]
            if value > 0
            else blocks[0]
            for value in recent
        ]
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


def column(value: float | None, scale_max: float, rows: int) -> tuple[str, ...]:
    """One point of :func:`area`: its glyph in each row, top row first."""
    eighths_total = round(_fraction(value, scale_max) * rows * _LEVELS)
    return tuple(
        _BLOCKS[min(max(eighths_total - row * _LEVELS, 0), _LEVELS)] for row in range(rows - 1, -1, -1)
    )


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


def stacked(shares: Sequence[tuple[float, str, str]], width: int) -> list[tuple[str, str]]:
    """Cells of a stacked bar as (text, style) pieces; ``shares`` are (fraction of the whole, the letter
    its cells are drawn with, style), in order. Each part is drawn in its own letter as well as its
    colour, so the bar reads the same without colour (a plain-text copy, a monochrome terminal).

    Cells go by largest remainder, so parts that make up the whole fill the bar (rounded one by one, a
    bar of 15.6 model and 0.4 loop cells left one "·" that no legend explained). Shares summing above 1
    are scaled down to fit; below 1, the rest is "·".
    """
    total = sum(max(share, 0.0) for share, _, _ in shares)
    scale = 1.0 / total if total > 1.0 else 1.0
    exact = [max(share, 0.0) * scale * width for share, _, _ in shares]
    cells = largest_remainder(exact, min(width, round(sum(exact))))
    pieces = [
        (letter * count, style) for count, (_, letter, style) in zip(cells, shares, strict=True) if count
    ]
    used = sum(cells)
    if used < width:
        pieces.append(("·" * (width - used), "dim"))
    return pieces


def _seconds_label(seconds: float) -> str:
    if seconds >= 120:
        return f"-{seconds / 60:.0f}m"
    return f"-{seconds:.0f}s"


def time_axis(width: int, seconds_per_point: float) -> str:
    """The line under a chart ``width`` points wide: how long ago its left edge and middle were, "now"."""
    if width <= 0:
        return ""
    cells = [" "] * width
    marks = [
        (0, _seconds_label(width * seconds_per_point)),
        (width // 2, _seconds_label(width / 2 * seconds_per_point)),
    ]
    for start, label in marks:
        if start + len(label) <= width - 4:
            cells[start : start + len(label)] = label
    if width >= 3:
        cells[width - 3 :] = "now"
    return "".join(cells)


def step_axis(width: int, first_step: int, last_step: int) -> str:
    """The line under a chart of steps: the first step shown on the left, the last on the right."""
    left, right = f"step {first_step}", f"step {last_step}"
    if len(left) + len(right) + 1 > width:
        return right[-width:].rjust(width) if width > 0 else ""
    return left + " " * (width - len(left) - len(right)) + right


def framed(
    values: Sequence[float | None] | Callable[[int, int], list[str]],
    scale_max: float,
    width: int,
    rows: int,
    *,
    top_label: str,
    seconds_per_point: float = 1.0,
    axis: str | None = None,
) -> tuple[list[str], list[str]]:
    """A chart ``width`` cells wide, ``rows`` tall plus its x axis: (axis column of each row, plot of
    each row), the axis column labelled with the top of the scale (``top_label``) and 0 at the bottom;
    the last row is the x axis: ``axis`` if given, else :func:`time_axis`. ``values`` may be a function
    (width, rows) -> the plot's rows (``History.area``, which keeps each point's glyphs)."""
    label_width = max(len(top_label), 1)
    plot_width = max(width - label_width - 1, 0)
    if callable(values):
        plot = values(plot_width, max(rows, 1))
    else:
        plot = area(values, scale_max, plot_width, max(rows, 1))
    column = []
    for row in range(len(plot)):
        label = top_label if row == 0 else "0" if row == len(plot) - 1 else ""
        column.append(label.rjust(label_width) + ("┤" if label else "│"))
    column.append(" " * label_width + "└")
    plot.append(time_axis(plot_width, seconds_per_point) if axis is None else axis[:plot_width])
    return column, plot
