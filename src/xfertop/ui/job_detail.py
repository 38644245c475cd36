"""One rank of a job in full: step history, where the time goes, the verdict and what to do."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer

from xfertop.analysis.steps import window_stats
from xfertop.model.gpu import GpuState
from xfertop.model.jobs import JobState, RankState
from xfertop.ui import chart
from xfertop.ui.format import human_bytes, ms, rate_gb_per_s
from xfertop.ui.rank_row import SEGMENT_STYLES, breakdown_bar, rank_flags, rank_label
from xfertop.ui.verdicts import verdict_line, verdict_of
from xfertop.ui.view_state import ViewState

_CHART_ROWS = 5


def _find(view: ViewState, job_key: str, pid: int) -> tuple[JobState, RankState] | None:
    for job in view.jobs.jobs if view.jobs else ():
        for rank in job.ranks:
            if job.job_key == job_key and rank.pid == pid:
                return job, rank
    return None


def _legend() -> Text:
    text = Text("   ")
    for name, style in SEGMENT_STYLES.items():
        text.append("█ ", style=style)
        text.append(f"{name}  ")
    return text


def rank_detail(job: JobState, rank: RankState, width: int, gpu: GpuState | None = None) -> Text:
    stats = window_stats(rank.steps)
    text = Text()
    text.append(f"{job.name}  rank {rank_label(rank)}  pid {rank.pid}  {rank.device}  {rank.status}\n",
                style="bold")
    text.append(" ".join(rank.argv) + "\n", style="dim")
    verdict = verdict_of(job, gpu)
    text.append_text(verdict_line(job, verdict, with_advice=False))
    for advice in verdict.advice:
        text.append(f"\n  - {advice}")
    text.append("\n")
    if stats is None:
        text.append(f"warming up: {len(rank.steps)} steps recorded, not yet a full window", style="dim")
        return text
    idle = ms(stats.gpu_idle.p50_ms) if stats.gpu_idle else "n/a (no GPU timing)"
    text.append(f"median step {ms(stats.wall.p50_ms)} (p95 {ms(stats.wall.p95_ms)})  "
                f"wait {ms(stats.data_wait.p50_ms)}  copy {ms(stats.copy.p50_ms)}  "
                f"compute {ms(stats.compute.p50_ms)}  GPU idle {idle}"
                f"   steps {stats.first_step}-{stats.last_step}, {stats.clock} clock\n")
    text.append_text(breakdown_bar(stats, min(width, 60)))
    text.append_text(_legend())
    text.append(f"\n{stats.samples_per_s:.0f} samples/s   H2D {rate_gb_per_s(stats.h2d_bytes_per_s)}"
                f"   pinned {human_bytes(rank.pinned_host_bytes)}"
                f"   workers {rank.dataloader_workers if rank.dataloader_workers is not None else 'n/a'}"
                f"   {', '.join(rank_flags(rank, stats))}\n")
    walls = [step.wall_ms for step in rank.steps]
    waits = [step.data_wait_ms for step in rank.steps]
    scale = max(walls) if walls else 1.0
    text.append(f"step time per step (top {ms(scale)})\n", style="bold")
    text.append("\n".join(chart.area(walls, scale, width, _CHART_ROWS)) + "\n", style="cyan")
    text.append("data wait per step (same scale)\n", style="bold")
    text.append("\n".join(chart.area(waits, scale, width, _CHART_ROWS)), style="red")
    return text


class JobDetail(Widget):
    def __init__(self, job_key: str, pid: int) -> None:
        super().__init__(id="job-detail", classes="live")
        self.job_key, self.pid = job_key, pid

    def render(self) -> Text:
        view = self.app.view  # type: ignore[attr-defined]
        found = _find(view, self.job_key, self.pid)
        if found is None:
            return Text(f"rank pid {self.pid} of job {self.job_key} is gone.", style="yellow")
        return rank_detail(*found, max(self.content_size.width, 10), view.gpu)


class JobDetailScreen(Screen):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, job_key: str, pid: int) -> None:
        super().__init__()
        self.job_key, self.pid = job_key, pid

    def compose(self) -> ComposeResult:
        yield JobDetail(self.job_key, self.pid)
        yield Footer()
