"""Two end-of-run summaries of `xfertop run` side by side (`xfertop compare BEFORE AFTER`): samples/s, the
mean step, each part of the host's step, the GPU's measured idle, and the last verdicts, with the change
in each. Pure: summaries (the JSON `xfertop run` keeps, docs/summary.md) in, rows out."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from xfertop.launch.summary import SCHEMA

COMPARE_SCHEMA = "xfertop.compare/1"
#: The host's parts, in the order the summary names them.
PARTS = (
    ("wait", "data wait"),
    ("loop_pre", "loop before the model"),
    ("copy", "copy"),
    ("model", "model"),
    ("sync", "sync"),
    ("loop_post", "loop after the step"),
)


class CompareError(Exception):
    """A summary that cannot be compared; the message is one sentence for the user."""


@dataclass(frozen=True)
class Row:
    name: str
    #: "rate" (samples/s: higher is better), "ms" (the step: lower is better) or "share" (0 to 1).
    unit: str
    before: float | None
    after: float | None

    @property
    def change(self) -> str:
        if self.before is None or self.after is None:
            return "n/a"
        if self.unit == "share":
            # Between the shares as shown (whole percent), so that the column agrees with them.
            points = round(self.after * 100) - round(self.before * 100)
            return f"{points:+d} pts" if points else "="
        if not self.before:
            return "n/a"
        return f"x{self.after / self.before:.2f}"


def read_summary(path: str) -> dict[str, Any]:
    """The summary at ``path``; CompareError for a file that is missing, not JSON, not a run summary, or
    of a run that saw no step."""
    try:
        with open(path, encoding="utf-8") as handle:
            summary = json.load(handle)
    except FileNotFoundError:
        raise CompareError(f"{path}: no such file") from None
    except OSError as exc:
        raise CompareError(f"{path}: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError):
        raise CompareError(f"{path} is not JSON: not an xfertop run summary") from None
    if not isinstance(summary, dict) or summary.get("schema") != SCHEMA:
        found = summary.get("schema") if isinstance(summary, dict) else None
        raise CompareError(
            f"{path} is not an xfertop run summary ({SCHEMA}; it says {found or 'no schema'}): "
            "`xfertop run` writes them under <ring directory>/summaries/"
        )
    if not summary.get("steps") or not isinstance(summary.get("shares"), dict):
        raise CompareError(f"{path}: that run saw no training step, so there is nothing to compare")
    return summary


def _share(summary: dict[str, Any], part: str) -> float | None:
    host = summary["shares"].get("host") or {}
    value = host.get(part)
    return float(value) if isinstance(value, (int, float)) else None


def _number(summary: dict[str, Any], key: str) -> float | None:
    value = summary.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _step_ms(summary: dict[str, Any]) -> float | None:
    """The mean step (ms); summaries written before it was kept have none."""
    return _number(summary, "step_ms")


def compare(before: dict[str, Any], after: dict[str, Any]) -> list[Row]:
    rows = [
        Row("samples/s", "rate", _number(before, "samples_per_s"), _number(after, "samples_per_s")),
        Row("step time", "ms", _step_ms(before), _step_ms(after)),
    ]
    rows += [Row(label, "share", _share(before, part), _share(after, part)) for part, label in PARTS]
    idle = (before["shares"].get("gpu_idle"), after["shares"].get("gpu_idle"))
    if idle != (None, None):  # a run on the CPU has no GPU row
        rows.append(Row("GPU idle (measured)", "share", *idle))
    return rows


def _verdict(summary: dict[str, Any]) -> dict[str, Any]:
    last = summary.get("last_verdict") or {}
    return {"kind": last.get("kind"), "headline": last.get("headline")}


def _cell(row: Row, value: float | None) -> str:
    if value is None:
        return "n/a"
    if row.unit == "share":
        return f"{value * 100:.0f}%"
    if row.unit == "ms":
        return f"{value:.1f} ms"
    return f"{value:.1f}"


def render_text(before_path: str, after_path: str, before: dict[str, Any], after: dict[str, Any]) -> str:
    rows = compare(before, after)
    width = max(len(row.name) for row in rows) + 2
    lines = [
        f"xfertop compare: {before.get('job')} ({before_path}) -> {after.get('job')} ({after_path})",
        f"{'':{width}}{'before':>12}{'after':>12}  change",
    ]
    for row in rows:
        lines.append(
            f"{row.name:{width}}{_cell(row, row.before):>12}{_cell(row, row.after):>12}  {row.change}"
        )
    for label, summary in (("before", before), ("after", after)):
        verdict = _verdict(summary)
        lines.append(f"verdict {label}: {verdict['headline'] or 'none (the run was too short for one)'}")
    if before.get("command") != after.get("command"):
        lines.append(
            f"commands: {' '.join(before.get('command') or [])!r} -> {' '.join(after.get('command') or [])!r}"
        )
    return "\n".join(lines) + "\n"


def as_json(
    before_path: str, after_path: str, before: dict[str, Any], after: dict[str, Any]
) -> dict[str, Any]:
    return {
        "schema": COMPARE_SCHEMA,
        "before": {"path": before_path, "job": before.get("job"), "verdict": _verdict(before)},
        "after": {"path": after_path, "job": after.get("job"), "verdict": _verdict(after)},
        "rows": [{**asdict(row), "change": row.change} for row in compare(before, after)],
    }
