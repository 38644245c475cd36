"""One analysis per snapshot: every rank's window statistics, its GPU busy share and verdict, and each
job's verdict, computed once and read by every face (rank rows, verdict lines, the detail screen,
`--once --json`, the exporter, record files).

Pure: snapshots in, an ``Analysis`` out. The one memory it has is the previous ``Analysis``, handed in
by the caller: a job that ends keeps the verdict of its last live window (frozen, with the GPU
utilisation seen then) instead of being judged again against what the GPU does now; and a rank whose
steps are the very same tuple as last time (the jobs source hands it over unchanged while a ring has
no new steps) keeps its statistics without recomputing them.

Evidence read at the snapshot (the workers' cores, NVML's busy share) must describe the steps judged.
When a loop ends (an epoch, the run) its non-persistent workers shut down before its last step closes,
and the GPU goes quiet while the heartbeat is still fresh: a rank keeps the workers' evidence last seen
while they ran, and a job whose ranks closed no step since the last snapshot and are overdue for
their next one keeps its verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from xfertop.analysis.evidence import Context, MemoryEvidence, memory_evidence, rank_context
from xfertop.analysis.steps import WindowStats
from xfertop.analysis.thresholds import OVERDUE_MIN_S, OVERDUE_STEPS
from xfertop.analysis.verdict import Verdict, job_verdict, judge, warming_up, window_or_early
from xfertop.model.gpu import GpuState
from xfertop.model.host import HostState
from xfertop.model.jobs import JobsState, JobState, RankState


def rank_key(rank: RankState) -> str:
    """What tells one rank from every other, across snapshots: its ring file."""
    return rank.ring_path


@dataclass(frozen=True)
class RankAnalysis:
    rank: RankState
    #: ``window_or_early`` of its recent steps (``stats.early`` for a first, early window); None while it
    #: warms up.
    stats: WindowStats | None
    #: What else is known of it: its GPU (while it steps and is the GPU's only user), its workers' cores.
    context: Context

    @property
    def gpu_busy_share(self) -> float | None:
        """NVML utilisation of its GPU as a fraction, only while it steps and is that GPU's only user."""
        return self.context.gpu_busy_share

    @cached_property
    def verdict(self) -> Verdict:
        """The rank judged alone, on what else is known of it, as a one-rank job is (a straggler is a
        job's verdict). Judged once, when a face first asks (the exporter's per-rank series)."""
        if self.stats is None:
            return warming_up(0)
        return judge(self.stats, dataloader_workers=self.rank.dataloader_workers, context=self.context)


@dataclass(frozen=True)
class JobAnalysis:
    job: JobState
    ranks: tuple[RankAnalysis, ...]
    verdict: Verdict
    #: Some rank still runs (live or stalled).
    live: bool
    #: The verdict is the one of the job's last window while it stepped, kept since it ended or stopped
    #: stepping (a job tearing down, or stalled).
    frozen: bool
    #: How it ended, one phrase per distinct end ("exited 0", "killed by SIGKILL"); () while live.
    ended_how: tuple[str, ...] = ()
    #: Some rank is known to have ended badly (non-zero exit, a signal, a ring never closed).
    failed: bool = False
    #: Each rank's evidence beyond its steps (by ring path) that the verdict was judged with: a stopped
    #: job's last window is judged again with it, not with the evidence of its end.
    judged_with: tuple[tuple[str, Context], ...] = field(default=(), compare=False)

    def rank(self, rank: RankState) -> RankAnalysis | None:
        key = rank_key(rank)
        return next((found for found in self.ranks if rank_key(found.rank) == key), None)


@dataclass(frozen=True)
class Analysis:
    jobs: tuple[JobAnalysis, ...] = ()

    def job(self, job_key: str) -> JobAnalysis | None:
        return next((found for found in self.jobs if found.job.job_key == job_key), None)

    def rank(self, rank: RankState) -> RankAnalysis | None:
        for job in self.jobs:
            if job.job.job_key == rank.job_key and (found := job.rank(rank)) is not None:
                return found
        return None


EMPTY = Analysis()


def _rank_analysis(
    rank: RankState,
    gpu: GpuState | None,
    host: HostState | None,
    memory: MemoryEvidence | None,
    previous: RankAnalysis | None,
    seen_at: float | None,
) -> RankAnalysis:
    if previous is not None and previous.rank.steps is rank.steps:
        stats = previous.stats
    else:
        stats = window_or_early(rank.steps)
    context = rank_context(
        rank,
        stats,
        gpu,
        host,
        memory,
        seen_at=seen_at,
        previous=previous.context if previous is not None else None,
    )
    return RankAnalysis(rank, stats, context)


def _stopped(rank: RankAnalysis, previous: JobAnalysis) -> bool:
    """The rank's loop has stopped (or paused), though its heartbeat may still count as fresh: no step
    has closed since the previous snapshot, and none for a few typical steps.

    Overdue alone is not enough. Batches can arrive in bursts: four workers that share one core finish
    together, so four steps of ~12 ms close at once and the next four a second later (scenario c on a
    loaded box: tests/fixtures/windows/confined_workers_bursty_cpu.json). Against a typical step of
    12 ms every snapshot between bursts is overdue, and holding the previous verdict there kept a job
    whose ring held 30 steps at "warming-up: 0 of the 5 steps" for its whole run."""
    stats = rank.stats
    if stats is None:
        return False
    before = previous.rank(rank.rank)
    if before is None or before.rank.steps[-1:] != rank.rank.steps[-1:]:
        return False
    return rank.rank.heartbeat_age_s > max(OVERDUE_MIN_S, OVERDUE_STEPS * stats.wall.p50_ms / 1000)


def analyse_job(
    job: JobState,
    gpu: GpuState | None,
    previous: JobAnalysis | None = None,
    host: HostState | None = None,
    *,
    seen_at: float | None = None,
) -> JobAnalysis:
    """``seen_at``: the jobs state's time, which places each rank's last step against the GPU reading's
    (None: the heartbeat's age alone says whether NVML's reading is the rank's)."""
    memory = memory_evidence(job.ranks, host)
    ranks = tuple(
        _rank_analysis(
            rank, gpu, host, memory, previous.rank(rank) if previous is not None else None, seen_at
        )
        for rank in job.ranks
    )
    live = any(rank.status != "finished" for rank in job.ranks)
    ends = [rank.end for rank in job.ranks if rank.end is not None]
    ended_how = tuple(dict.fromkeys(end.describe() for end in ends))
    failed = any(end.failed for end in ends)
    stepping = any(r.context.stepping for r in ranks)
    if not stepping and previous is not None and (previous.live or previous.frozen):
        # Ended since the last snapshot, or stopped stepping (tearing down, stalled), or kept so: the
        # job's last window while it stepped, not one of its workers gone and its GPU quiet.
        verdict, judged_with = previous.verdict, previous.judged_with
        if verdict.rule == "warming-up":
            # It stopped before a snapshot judged it (a short job, or snapshots far apart): judge the
            # steps its ring holds. No evidence of now enters (a rank's GPU busy share and workers are
            # read only while it steps).
            verdict = _judge_job(job, ranks)
            judged_with = _contexts(ranks)
        elif not previous.frozen:
            # Its ring's last steps, judged with the evidence the last live verdict had (NVML, the
            # workers), not with the evidence of now: every face that sees the job stop judges the same
            # window, whenever it last looked. The summary (reading every 2 s) kept a validation job's
            # verdict of steps 800-879, "healthy", where the live view, polled later, froze steps 840-919
            # at "loop-bound" (truth: loop-bound) and the job ran to 940 (session 46); a 24-step job read
            # live at its 12th step kept "early, 7 steps" and advice that needs 8 (session 35).
            verdict = _judge_job(job, ranks, dict(judged_with))
        return JobAnalysis(
            job,
            ranks,
            verdict,
            live=live,
            frozen=True,
            ended_how=ended_how,
            failed=failed,
            judged_with=judged_with,
        )
    if (
        previous is not None
        and previous.live
        and not previous.frozen
        and previous.verdict.rule != "warming-up"
        and all(_stopped(r, previous) for r in ranks if r.context.stepping)
    ):
        # Still "stepping" by the heartbeat, yet stopped: what the GPU and the host show now is the
        # loop's end, not its steps. The verdict of the window while steps came in stands (a warming-up
        # earned nothing to keep: the steps the ring holds are judged).
        return JobAnalysis(
            job,
            ranks,
            previous.verdict,
            live=live,
            frozen=False,
            ended_how=ended_how,
            failed=failed,
            judged_with=previous.judged_with,
        )
    verdict = _judge_job(job, ranks)
    return JobAnalysis(
        job,
        ranks,
        verdict,
        live=live,
        frozen=False,
        ended_how=ended_how,
        failed=failed,
        judged_with=_contexts(ranks),
    )


def _contexts(ranks: tuple[RankAnalysis, ...]) -> tuple[tuple[str, Context], ...]:
    return tuple((r.rank.ring_path, r.context) for r in ranks)


def _judge_job(
    job: JobState, ranks: tuple[RankAnalysis, ...], contexts: dict[str, Context] | None = None
) -> Verdict:
    """``contexts``: each rank's evidence beyond its steps, by ring path, where not its analysis's own."""
    return job_verdict(
        job.ranks,
        stats_by_rank={r.rank.ring_path: r.stats for r in ranks},
        contexts={r.rank.ring_path: (contexts or {}).get(r.rank.ring_path, r.context) for r in ranks},
    )


def analyse(
    jobs: JobsState | None,
    gpu: GpuState | None,
    previous: Analysis | None = None,
    *,
    host: HostState | None = None,
) -> Analysis:
    """The analysis of one snapshot; ``previous`` is the one of the snapshot before (or None); ``host``
    (optional) lets the advice see where DataLoader workers may run and the host's memory."""
    if jobs is None:
        return EMPTY
    before = previous if previous is not None else EMPTY
    return Analysis(
        tuple(
            analyse_job(job, gpu, before.job(job.job_key), host, seen_at=jobs.timestamp) for job in jobs.jobs
        )
    )
