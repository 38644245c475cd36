"""Human table, sweep chart and Markdown report of a run; the records folder where runs are kept."""

from __future__ import annotations

import os
import re
from pathlib import Path

from xfertop.bench.protocol import run_to_json
from xfertop.bench.sizes import format_size
from xfertop.model.bench import BenchRun, CaseResult, Measurement

_STATUS_WORD = {"pass": "PASS", "warn": "WARN", "fail": "FAIL", "info": "info", "skip": "skip"}
CHART_WIDTH = 40


def records_dir() -> Path:
    """$XFERTOP_RECORDS, else $XDG_DATA_HOME/xfertop/records, else ~/.local/share/xfertop/records."""
    if os.environ.get("XFERTOP_RECORDS"):
        return Path(os.environ["XFERTOP_RECORDS"])
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "xfertop" / "records"


def _value(row: Measurement) -> str:
    return f"{row.value:.3g} {row.unit}" if row.value < 100 else f"{row.value:.0f} {row.unit}"


def _spread(row: Measurement) -> str:
    return "" if row.spread is None else f"±{row.spread / 2:.1%}"


def _row_cells(row: Measurement) -> list[str]:
    verified = {True: "ok", False: "MISMATCH", None: ""}[row.verified]
    warm = "" if row.warmup_value is None else f"{row.warmup_value:.3g}"
    extra = " ".join(
        f"{k}={v:g}" for k, v in row.extra.items() if k not in ("copies_per_sample", "pre_blocked")
    )
    return [row.label, format_size(row.size_bytes), _value(row), _spread(row), warm, verified, extra]


HEADERS = ["case / row", "size", "median", "spread", "warm-up", "data", "also"]


def case_rows(case: CaseResult) -> list[list[str]]:
    if case.skipped_reason:
        return [[f"skipped: {case.skipped_reason}", "", "", "", "", "", ""]]
    return [_row_cells(r) for r in case.rows]


def _text_table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)


def sweep_series(run: BenchRun, memory: str, direction: str) -> list[tuple[int, float]]:
    """(size, GB/s) points of the size sweep for one memory kind and direction."""
    return [
        (r.size_bytes, r.value)
        for c in run.cases
        if c.case == "sweep"
        for r in c.rows
        if r.memory == memory and r.direction == direction
    ]


def sweep_chart(run: BenchRun, width: int = CHART_WIDTH) -> str:
    """A text bar chart of the sweep: GB/s against size, pinned and pageable, both directions."""
    series = {(m, d): sweep_series(run, m, d) for m in ("pinned", "pageable") for d in ("h2d", "d2h")}
    peak = max((v for pts in series.values() for _s, v in pts), default=0.0)
    if not peak:
        return ""
    lines = [f"size sweep (GB/s; full bar = {peak:.1f})"]
    for (memory, direction), points in series.items():
        for size, value in points:
            bar = "#" * max(1, round(value / peak * width))
            lines.append(f"{memory:8} {direction.upper()} {format_size(size):>8} {bar} {value:.1f}")
    return "\n".join(lines)


def human_table(run: BenchRun) -> str:
    m = run.machine
    out = [
        f"xfertop {run.mode} on {m.hostname} ({m.backend}; {', '.join(m.gpu_names) or 'no GPU'}; "
        f"driver {m.driver_version or 'n/a'}, CUDA {m.cuda_version or 'n/a'}, "
        f"torch {m.torch_version or 'n/a'})"
    ]
    for link in run.links:
        out.append(
            f"GPU {link.gpu_index} link under load: Gen{link.gen_current} x{link.width_current} "
            f"(slot max Gen{link.gen_max} x{link.width_max}, GPU max Gen{link.gen_gpu_max}, {link.pstate})"
        )
    rows = [HEADERS]
    for case in run.cases:
        rows.append([f"[{case.case}] {case.title}", "", "", "", "", "", ""])
        rows.extend(["  " + r[0], *r[1:]] for r in case_rows(case))
    out += ["", _text_table(rows)]
    chart = sweep_chart(run)
    if chart:
        out += ["", chart]
    out += ["", "verdicts:"]
    out += [f"  {_STATUS_WORD[v.status]:4}  {v.check}: {v.message}" for v in run.verdicts]
    out += ["", f"overall: {_STATUS_WORD[run.overall]} (exit {run.exit_code}) in {run.wall_s:.1f} s"]
    return "\n".join(out)


def _md_table(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * len(rows[0])]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows[1:]]
    return "\n".join(lines)


def markdown_report(run: BenchRun) -> str:
    m = run.machine
    facts = [
        ["fact", "value"],
        ["host", m.hostname],
        ["backend", m.backend],
        ["GPUs", ", ".join(m.gpu_names) or "none"],
        ["driver", m.driver_version or "n/a"],
        ["CUDA", m.cuda_version or "n/a"],
        ["torch", m.torch_version or "n/a"],
        ["Python", m.python_version],
        ["CPUs / NUMA nodes", f"{m.cpu_count} / {m.numa_nodes}"],
        ["GPU NUMA node", "n/a" if m.gpu_numa_node is None else str(m.gpu_numa_node)],
        ["process CPUs", _cpus(m.process_cpus)],
        ["GPU-local CPUs", _cpus(m.gpu_local_cpus) or "n/a"],
    ]
    for link in run.links:
        facts.append(
            [
                f"GPU {link.gpu_index} link (under load)",
                f"Gen{link.gen_current} x{link.width_current}; slot max Gen{link.gen_max} x{link.width_max}; "
                f"GPU max Gen{link.gen_gpu_max}; {link.pstate}; replays +{link.replay_delta}; "
                f"correctable errors {_delta(link.correctable_delta)}",
            ]
        )
    out = [
        f"# xfertop {run.mode}: {_STATUS_WORD[run.overall]}",
        "",
        f"Started {run.started_utc}, {run.wall_s:.1f} s, exit code {run.exit_code}.",
        "",
        _md_table(facts),
        "",
        "## Verdicts",
        "",
        _md_table(
            [["status", "check", "detail"]]
            + [[_STATUS_WORD[v.status], v.check, v.message] for v in run.verdicts]
        ),
    ]
    for case in run.cases:
        out += ["", f"## {case.case}: {case.title}", "", _md_table([HEADERS, *case_rows(case)])]
        out += [f"- {note}" for note in case.notes]
    chart = sweep_chart(run)
    if chart:
        out += ["", "## Sweep chart", "", "```", chart, "```"]
    out += [
        "",
        "## Thresholds",
        "",
        _md_table([["name", "value"]] + [[k, f"{v:g}"] for k, v in sorted(run.thresholds.items())]),
    ]
    return "\n".join(out) + "\n"


def _delta(count: int | None) -> str:
    return "n/a" if count is None else f"+{count}"


def _cpus(cpus: tuple[int, ...]) -> str:
    """(0, 1, 2, 3, 8) -> '0-3,8'."""
    spans: list[list[int]] = []
    for cpu in sorted(cpus):
        if spans and spans[-1][1] == cpu - 1:
            spans[-1][1] = cpu
        else:
            spans.append([cpu, cpu])
    return ",".join(f"{low}-{high}" if high > low else str(low) for low, high in spans)


def record_stem(run: BenchRun) -> str:
    stamp = re.sub(r"[^0-9T]", "", run.started_utc.split("+")[0])
    host = re.sub(r"[^A-Za-z0-9_.-]", "_", run.machine.hostname)
    return f"{run.mode}-{host}-{stamp}"


def save_record(run: BenchRun, folder: Path | None = None) -> tuple[Path, Path]:
    """Write <mode>-<host>-<time>.json and .md into the records folder; returns both paths."""
    folder = folder or records_dir()
    folder.mkdir(parents=True, exist_ok=True)
    stem = record_stem(run)
    json_path, md_path = folder / f"{stem}.json", folder / f"{stem}.md"
    json_path.write_text(run_to_json(run) + "\n")
    md_path.write_text(markdown_report(run))
    return json_path, md_path
