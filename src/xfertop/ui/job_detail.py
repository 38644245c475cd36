"""One rank of a job in full: step history, where the time goes, the verdict and what to do."""

from __future__ import annotations

import time
from typing import ClassVar

from rich.console import Console
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widget import Widget

from xfertop.analysis.job_analysis import Analysis, JobAnalysis, RankAnalysis
from xfertop.analysis.steps import WindowStats, percentile
from xfertop.model.jobs import ProbeRecord, RankState
from xfertop.ui import chart
from xfertop.ui.format import NA, ms, rate_gb_per_s, samples_rate_text
from xfertop.ui.jobs_pane import verdict_line, wrapped_advice
from xfertop.ui.key_footer import KeyFooter
from xfertop.ui.process_table import pinned_text
from xfertop.ui.rank_row import (
    SEGMENTS,
    breakdown_bar,
    gpu_busy_text,
    host_shares,
    legend,
    rank_flags,
    rank_label,
)
from xfertop.ui.view_state import ViewState

#: Each of the two charts is at least this tall; they share what the facts above them leave.
_CHART_ROWS_MIN = 3


def _find(analysis: Analysis, job_key: str, pid: int) -> tuple[JobAnalysis, RankAnalysis] | None:
    job = analysis.job(job_key)
    if job is None:
        return None
    found = next((rank for rank in job.ranks if rank.rank.pid == pid), None)
    return None if found is None else (job, found)


#: A step longer than this many times the 95th percentile of those shown (a checkpoint, an evaluation) no
#: longer sets the charts' top: it would flatten every other step to the bottom row.
_OUTLIER_TIMES_P95 = 3.0


def step_scale(values: list[float]) -> tuple[float, int]:
    """The charts' top and how many steps go past it: the longest step, unless a few outliers are more
    than ``_OUTLIER_TIMES_P95`` times the 95th percentile; then 1.5x that percentile."""
    if not values:
        return 1.0, 0
    p95, longest = percentile(values, 95), max(values)
    if p95 > 0 and longest > _OUTLIER_TIMES_P95 * p95:
        top = 1.5 * p95
        return top, sum(1 for value in values if value > top)
    return max(longest, 1e-9), 0


def _step_chart(
    rank: RankState, values: list[float], scale: float, top: str, width: int, rows: int, style: str
) -> list[Text]:
    """``rows`` lines: a chart of one value per step, the newest step on the right, then its step axis."""
    shown = rank.steps[-max(width - len(top) - 1, 0) :]
    axis = chart.step_axis(width - len(top) - 1, shown[0].step, shown[-1].step) if shown else ""
    column, plot = chart.framed(values, scale, width, rows - 1, top_label=top, axis=axis)
    lines = []
    for index, (left, right) in enumerate(zip(column, plot, strict=True)):
        line = Text(left, style="dim")
        line.append(right, style="dim" if index == len(plot) - 1 else style)
        lines.append(line)
    return lines


def _pct(share: float) -> str:
    return f"{100 * share:.0f}%"


def _gpu_text(busy: float | None, stats: WindowStats) -> str:
    """The GPU's own clock: its busy share (NVML) and where its measured idle gaps fell."""
    text = f"busy {gpu_busy_text(busy, stats)}" + ("" if busy is not None else " (NVML busy not known)")
    idle = stats.idle
    if idle is None:
        return text + "; idle gaps not measured (no CUDA timing)"
    where = ", ".join(
        f"{name} {_pct(getattr(idle, name))}"
        for name in ("wait", "loop_pre", "copy", "loop_post", "model")
        if getattr(idle, name) >= 0.005
    )
    return f"{text}; idle between steps' work {_pct(idle.total)}" + (f" (in {where})" if where else "")


def probe_line(probes: tuple[ProbeRecord, ...], job_name: str, rank: int | None, now_s: float) -> Text | None:
    """The last `xfertop probe` of this job's script (docs/probe.md): what each fix would buy."""
    probe = next((probe for probe in probes if probe.job == job_name), None)
    if probe is None or not probe.ranks:
        return None
    figures = next((found for found in probe.ranks if found.rank == rank), probe.ranks[0])
    when = time.strftime("%H:%M", time.localtime(probe.finished_unix_s))
    ago = max(now_s - probe.finished_unix_s, 0.0)
    age = f"{ago / 60:.0f} min ago" if ago < 5400 else f"{ago / 3600:.0f} h ago"
    # A phase that was the input-free phase again (nothing to pin, no copy seen) is left out, as the
    # probe's own report says of it.
    parts = [
        f"{label} {speedup:.2f}x"
        for label, speedup, measured in (
            ("input free", figures.speedup_input_free, True),
            ("pinned copies", figures.speedup_pinned, figures.tensors_pinned > 0),
            ("copies free", figures.speedup_copy_free, figures.copies_made_resident > 0),
        )
        if speedup is not None and measured
    ]
    base = "" if figures.baseline_step_s is None else f"as is {ms(figures.baseline_step_s * 1000)} a step; "
    unfinished = "" if probe.complete else " (not every phase reached)"
    return Text(f"last probe ({when}, {age}): {base}{', '.join(parts) or 'no phase reached'}{unfinished}")


def rank_detail(
    job: JobAnalysis,
    found: RankAnalysis,
    view: ViewState,
    width: int,
    height: int,
    console: Console | None = None,
) -> Text:
    """Everything about one rank, its two charts as tall as ``height`` rows leave room for. With a
    ``console`` every line above the charts is wrapped to ``width`` (never cut); without, cut."""
    rank, stats = found.rank, found.stats
    lines: list[Text] = []
    status = rank.status if job.live else ", ".join(job.ended_how) or rank.status
    device = f"  {rank.device}" if rank.device else ""
    lines.append(
        Text(f"{job.job.name}  rank {rank_label(rank)}  pid {rank.pid}{device}  {status}", style="bold")
    )
    lines.append(Text(" ".join(rank.argv), style="dim"))
    lines.append(verdict_line(job.job.name, job, with_advice=False))
    for advice in job.verdict.advice:  # indented under their first line, as in the main view
        lines += wrapped_advice(advice, width) if console is not None else [Text(f"  - {advice}")]
    if view.jobs is not None:
        probed = probe_line(view.jobs.probes, job.job.name, rank.rank, view.jobs.timestamp)
        if probed is not None:
            lines.append(probed)
    workers = rank.dataloader_workers
    flags = ", ".join(rank_flags(rank, stats))
    if stats is None:
        warming = f"warming up: {len(rank.steps)} steps recorded, not yet a full window"
        lines.append(Text(warming, style="dim"))
    else:
        shares = zip(SEGMENTS, host_shares(stats), strict=True)
        parts = "  ".join(f"{name} {_pct(share)}" for (name, _, _), share in shares)
        lines.append(
            Text(
                f"median step {ms(stats.wall.p50_ms)} (p95 {ms(stats.wall.p95_ms)})   host: {parts}"
                f"   steps {stats.first_step}-{stats.last_step}"
            )
        )
        lines.append(Text(f"GPU: {_gpu_text(found.gpu_busy_share, stats)}"))
        key = legend()
        bar = breakdown_bar(stats, max(min(width - key.cell_len - 2, 60), 10))
        bar.append("  ")
        bar.append_text(key)
        lines.append(bar)
        lines.append(
            Text(
                f"{samples_rate_text(stats.samples_per_s)} samples/s"
                f"   H2D {rate_gb_per_s(stats.h2d_bytes_per_s)}"
                f"   pinned {pinned_text(view, rank.pid, rank.pinned_host_bytes)}"
                f"   DataLoader workers {NA if workers is None else workers}"
                + (f"   flags: {flags}" if flags else "")
            )
        )
    walls = [step.wall_ms for step in rank.steps]
    waits = [step.data_wait_ms for step in rank.steps]
    shown_walls = walls[-max(width, 1) :]  # about the steps the charts show
    scale, above = step_scale(shown_walls)
    if console is not None:  # every fact whole, over as many rows as it takes; the charts take the rest
        lines = [row for line in lines for row in line.wrap(console, max(width, 8))]
    for line in lines:
        line.no_wrap = True
        line.truncate(width, overflow="ellipsis")
    rows = max((height - len(lines) - 2) // 2, _CHART_ROWS_MIN)
    top = ms(scale)
    past = f"; {above} step{'s' * (above != 1)} above it, the longest {ms(max(shown_walls))}" if above else ""
    lines.append(Text(f"step time per step (newest on the right, top {top}{past})", style="bold"))
    lines += _step_chart(rank, walls, scale, top, width, rows, "cyan")
    lines.append(Text("data wait per step (same scale)", style="bold"))
    lines += _step_chart(rank, waits, scale, top, width, max(height - len(lines), _CHART_ROWS_MIN), "red")
    return Text("\n").join(lines)


class JobDetail(Widget):
    def __init__(self, job_key: str, pid: int) -> None:
        super().__init__(id="job-detail", classes="live")
        self.job_key, self.pid = job_key, pid

    def render(self) -> Text:
        app = self.app
        found = _find(app.analysis, self.job_key, self.pid)  # type: ignore[attr-defined]
        if found is None:
            return Text(f"rank pid {self.pid} of job {self.job_key} is gone.", style="yellow")
        size = self.content_size
        width, height = max(size.width, 10), max(size.height, 12)
        return rank_detail(*found, app.view, width, height, app.console)  # type: ignore[attr-defined]


class JobDetailScreen(Screen):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, job_key: str, pid: int) -> None:
        super().__init__()
        self.job_key, self.pid = job_key, pid

    def compose(self) -> ComposeResult:
        yield JobDetail(self.job_key, self.pid)
        yield KeyFooter()
