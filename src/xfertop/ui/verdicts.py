"""The verdict for a job, as the panes show it (the judging itself is xfertop.analysis.verdict)."""

from __future__ import annotations

from rich.text import Text

from xfertop.analysis.rank_gpu import gpu_busy_share_by_pid
from xfertop.analysis.verdict import Verdict, job_verdict
from xfertop.model.gpu import GpuState
from xfertop.model.jobs import JobState

_SEVERITY_STYLES = {"info": "green", "warn": "bold yellow", "critical": "bold red"}


def verdict_of(job: JobState, gpu: GpuState | None) -> Verdict:
    """The job's verdict, with NVML utilisation of each rank's GPU (without it, sync-bound cannot show)."""
    return job_verdict(job.ranks, gpu_busy_share_by_pid=gpu_busy_share_by_pid(job.ranks, gpu))


def verdict_line(job: JobState, verdict: Verdict, with_advice: bool = True) -> Text:
    """ "train.py: input-bound: the GPU sits idle 41% ..." (plus every piece of advice, if asked)."""
    line = Text()
    line.append(f"{job.name}: ", style="bold")
    line.append(verdict.headline, style=_SEVERITY_STYLES.get(verdict.severity, "bold"))
    if with_advice and verdict.advice:
        line.append("  " + " ".join(verdict.advice), style="dim")
    return line
