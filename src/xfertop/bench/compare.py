"""`--compare OLD.json`: what changed since an earlier run, and whether the conditions were the same."""

from __future__ import annotations

from dataclasses import dataclass

from xfertop.bench.sizes import format_size
from xfertop.model.bench import BenchRun

#: A figure moved by more than this share (and more than both runs' own spread) counts as a change.
CHANGE_RATIO = 0.05


def conditions(run: BenchRun) -> dict[str, str]:
    """What must match for two runs to be compared like for like."""
    m = run.machine
    facts = {
        "host": m.hostname,
        "backend": m.backend,
        "GPUs": ", ".join(m.gpu_names),
        "driver": str(m.driver_version),
        "CUDA": str(m.cuda_version),
        "torch": str(m.torch_version),
    }
    for link in run.links:
        facts[f"GPU {link.gpu_index} link"] = f"Gen{link.gen_current} x{link.width_current}"
    return facts


@dataclass(frozen=True)
class FigureChange:
    case: str
    label: str
    size_bytes: int
    unit: str
    old: float
    new: float
    changed: bool

    @property
    def ratio(self) -> float:
        return self.new / self.old - 1 if self.old else 0.0


@dataclass(frozen=True)
class Comparison:
    #: (what, old, new) for every condition that differs; empty = same conditions.
    condition_changes: tuple[tuple[str, str, str], ...]
    figures: tuple[FigureChange, ...]
    #: (check, old status, new status) where the status moved.
    verdict_changes: tuple[tuple[str, str, str], ...]
    overall: tuple[str, str]

    @property
    def same_conditions(self) -> bool:
        return not self.condition_changes


def compare(old: BenchRun, new: BenchRun) -> Comparison:
    old_c, new_c = conditions(old), conditions(new)
    cond = tuple(
        (k, old_c.get(k, "-"), new_c.get(k, "-"))
        for k in dict.fromkeys([*old_c, *new_c])
        if old_c.get(k) != new_c.get(k)
    )
    old_rows = {(c.case, r.label, r.size_bytes): r for c in old.cases for r in c.rows}
    figures = []
    for case in new.cases:
        for row in case.rows:
            before = old_rows.get((case.case, row.label, row.size_bytes))
            if before is None or before.unit != row.unit:
                continue
            noise = max(before.spread or 0.0, row.spread or 0.0, CHANGE_RATIO)
            moved = abs(row.value / before.value - 1) > noise if before.value else row.value != 0
            figures.append(
                FigureChange(case.case, row.label, row.size_bytes, row.unit, before.value, row.value, moved)
            )
    old_v = {v.check: v.status for v in old.verdicts}
    verdicts = tuple(
        (v.check, old_v[v.check], v.status)
        for v in new.verdicts
        if v.check in old_v and old_v[v.check] != v.status
    )
    return Comparison(cond, tuple(figures), verdicts, (old.overall, new.overall))


def render_comparison(cmp: Comparison, *, all_rows: bool = False) -> str:
    out = []
    if cmp.same_conditions:
        out.append("same conditions as the earlier run (host, GPUs, driver, CUDA, torch, link)")
    else:
        out.append("CONDITIONS DIFFER, so figures are not like for like:")
        out += [f"  {what}: {old} -> {new}" for what, old, new in cmp.condition_changes]
    out.append(f"overall: {cmp.overall[0]} -> {cmp.overall[1]}")
    out += [f"  {check}: {old} -> {new}" for check, old, new in cmp.verdict_changes]
    shown = [f for f in cmp.figures if f.changed or all_rows]
    if shown:
        out.append("figures that moved more than their spread (and 5%):" if not all_rows else "figures:")
        out += [
            f"  {f.case} / {f.label} {format_size(f.size_bytes)}: {f.old:.3g} -> {f.new:.3g} {f.unit} "
            f"({f.ratio:+.1%})"
            for f in shown
        ]
    else:
        out.append(f"no figure moved beyond its spread ({len(cmp.figures)} compared)")
    return "\n".join(out)
