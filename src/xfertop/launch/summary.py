"""The end-of-run summary of `xfertop run`: where the job's time went over the whole run, its verdicts
over time and the advice, printed on stderr after the job's own output and kept as JSON.

A daemon thread in the launcher (never in the job) reads the rings of its own command (those carrying its
launch token) and folds the steps it has not counted yet into running totals, so a run far longer than a
ring holds (1024 steps) is still summed whole; every ``interval_s`` it also notes the job's verdict, so its
verdicts over time survive the ring's wrap-around. A fast job's rings are read more often than that
(``next_read_s``): a quarter of a ring between two reads, so a job of up to ~9,000 steps/s loses none.
Its advice rests on the host evidence the live view's does (where the ranks' DataLoader workers may run,
how busy those cores are, the cgroup's CPU quota, memory), sampled on the same thread at each verdict
from /proc, and on the GPU's busy share from NVML (utilisation and processes only: no PCIe measurement,
whose byte counters need a polling thread before Hopper), so the summary and the live view judge the
same evidence. A step is folded once it is ``SETTLE_STEPS`` behind its rank's newest (its GPU gap,
resolved lazily, is in by then), and every step at the end.
The launcher's exit waits for the thread ``JOIN_TIMEOUT_S`` at most.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from xfertop import wire
from xfertop.analysis.steps import between_iterations_ms, split_gap
from xfertop.model.jobs import JobsState, RankState, StepRecord

#: A live rank's step is counted once it is this many steps behind the rank's newest.
SETTLE_STEPS = 128
#: The most the launcher's exit waits for the thread's last read.
JOIN_TIMEOUT_S = 1.0
#: The rings are read at least this often (between verdicts, a read only counts steps), and at most as
#: often as ``FASTEST_READ_S``: a read takes ~0.3 ms plus ~2 us a step folded.
SLOWEST_READ_S = 0.5
FASTEST_READ_S = 0.1
#: The timeline's span before the first step (its kind; no verdict has it), shown where it lasted this long.
STARTING = "starting"
STARTING_SPAN_MIN_S = 1.0
#: The share of a ring a job may fill between two reads: with SETTLE_STEPS held back and a read that comes
#: late on a loaded machine, a quarter leaves room to spare.
RING_SHARE_PER_READ = 0.25
SCHEMA = "xfertop.run-summary/1"


@dataclass
class PhaseTotals:
    """Sums over the steps of one rank, in milliseconds: the host's parts, and the GPU's measured idle
    gaps over the steps that carry one (``gpu_*``)."""

    steps: int = 0
    samples: int = 0
    wall_ms: float = 0.0
    data_wait_ms: float = 0.0
    loop_pre_ms: float = 0.0
    copy_cpu_ms: float = 0.0
    sync_ms: float = 0.0
    loop_post_ms: float = 0.0
    partitioned_steps: int = 0
    #: Time between a loader's iterations where no step ran (the code after each epoch).
    between_ms: float = 0.0
    gpu_steps: int = 0
    gpu_wall_ms: float = 0.0
    #: The GPU's measured idle, by what the host did meanwhile (``split_gap``'s parts).
    gpu_idle_wait_ms: float = 0.0
    gpu_idle_loop_pre_ms: float = 0.0
    gpu_idle_copy_ms: float = 0.0
    gpu_idle_loop_post_ms: float = 0.0
    gpu_idle_model_ms: float = 0.0

    def add(self, step: StepRecord, previous: StepRecord | None = None) -> None:
        """Count ``step``; ``previous`` is the step before it where known (its gap may reach into it)."""
        self.steps += 1
        self.samples += step.samples
        self.wall_ms += step.wall_ms
        self.data_wait_ms += step.data_wait_ms
        self.loop_pre_ms += step.loop_pre_ms
        self.copy_cpu_ms += step.copy_cpu_ms
        self.sync_ms += step.sync_ms
        self.loop_post_ms += step.loop_post_ms
        self.partitioned_steps += step.partitioned
        self.between_ms += between_iterations_ms(step, previous)
        if step.gpu_gap_ms is not None:
            self.gpu_steps += 1
            self.gpu_wall_ms += step.wall_ms
            # The GPU's idle as the live view counts it: the gap the host's parts explain, never time
            # that was no step's (the whole run's share would pass 100%).
            idle = split_gap(step, previous)
            self.gpu_idle_wait_ms += idle.wait
            self.gpu_idle_loop_pre_ms += idle.loop_pre
            self.gpu_idle_copy_ms += idle.copy
            self.gpu_idle_loop_post_ms += idle.loop_post
            self.gpu_idle_model_ms += idle.model

    def merge(self, other: PhaseTotals) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def host_shares(self) -> dict[str, float]:
        """The host's step in its six parts, as fractions of the wall that add up to 1."""
        parts = {
            "wait": self.data_wait_ms,
            "loop_pre": self.loop_pre_ms,
            "copy": self.copy_cpu_ms,
            "sync": self.sync_ms,
            "loop_post": self.loop_post_ms,
        }
        model = max(0.0, self.wall_ms - sum(parts.values()))
        shares = {name: _share(ms, self.wall_ms) for name, ms in parts.items()}
        shares["model"] = _share(model, self.wall_ms)
        return {name: shares[name] for name in ("wait", "loop_pre", "copy", "model", "sync", "loop_post")}

    def shares(self) -> dict[str, Any]:
        """Fractions of the step wall time: the host's parts, and the GPU's measured idle gaps (between
        steps' work) where steps carry them."""
        host = self.host_shares()
        idle = {
            "wait": self.gpu_idle_wait_ms,
            "loop_pre": self.gpu_idle_loop_pre_ms,
            "copy": self.gpu_idle_copy_ms,
            "loop_post": self.gpu_idle_loop_post_ms,
            "model": self.gpu_idle_model_ms,
        }
        return {
            "clock": "gpu" if self.gpu_steps else "cpu",
            "data_wait": host["wait"],
            "copy": host["copy"],
            "compute": host["model"],
            "gpu_idle": _share(sum(idle.values()), self.gpu_wall_ms) if self.gpu_steps else None,
            "gpu_idle_in": (
                {name: _share(ms, self.gpu_wall_ms) for name, ms in idle.items()} if self.gpu_steps else None
            ),
            "partitioned": self.partitioned_steps * 2 > self.steps,
            "host": host,
            # Time between the loader's iterations, where no step ran: a share of it and the steps' wall.
            "between_iterations": _share(self.between_ms, self.wall_ms + self.between_ms),
        }


def next_read_s(new_steps: int, elapsed_s: float, verdict_interval_s: float) -> float:
    """How long to wait before the next read of the rings, after one that found ``new_steps`` steps (the
    most of any rank) written over the ``elapsed_s`` since the read before it."""
    slowest = min(SLOWEST_READ_S, verdict_interval_s)
    if new_steps <= 0 or elapsed_s <= 0:
        return slowest
    filling_s = RING_SHARE_PER_READ * wire.DEFAULT_CAPACITY * elapsed_s / new_steps
    return max(min(FASTEST_READ_S, slowest), min(slowest, filling_s))


def _same_span(span: VerdictSpan, kind: str, headline: str) -> bool:
    """One span per run of a verdict kind; "not measured" (kind warming-up) is a span of its own."""
    return span.kind == kind and span.headline.startswith("not measured") == headline.startswith(
        "not measured"
    )


def _sample(source: Any) -> Any:
    """One sample of an optional source; None where there is none or it failed."""
    if source is None:
        return None
    try:
        return source.sample_once()
    except Exception:
        return None


def _share(part: float, whole: float) -> float:
    return round(part / whole, 4) if whole > 0 else 0.0


@dataclass
class RankTotals:
    """What is known of one rank (one ring) over the whole run."""

    rank: RankState
    totals: PhaseTotals = field(default_factory=PhaseTotals)
    #: Every step below this number has been counted (or was lost to the ring's wrap-around).
    next_step: int = 0
    steps_lost: int = 0

    def fold(self, rank: RankState, final: bool) -> None:
        self.rank = rank
        if not rank.steps:
            return
        newest = rank.steps[-1].step
        limit = newest + 1 if final or rank.status == "finished" else newest + 1 - SETTLE_STEPS
        for index, step in enumerate(rank.steps):
            if self.next_step <= step.step < limit:
                # Steps between the last one counted and this one were overwritten before they were read:
                # the ring wrapped between two reads. The reader keeps what it read before the wrap, so the
                # hole may be anywhere in ``rank.steps``, not only before its first step.
                self.steps_lost += step.step - self.next_step
                self.totals.add(step, rank.steps[index - 1] if index else None)
                self.next_step = step.step + 1


@dataclass(frozen=True)
class VerdictSpan:
    from_s: float
    to_s: float
    kind: str
    headline: str


class RunFollower:
    """Follows the rings of one `xfertop run` (by its launch token) on a daemon thread."""

    def __init__(
        self,
        launch_token: str,
        interval_s: float = 2.0,
        ring_dir: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.launch_token = launch_token
        self.interval_s = interval_s
        self.ring_dir = ring_dir
        self._clock = clock
        self.started_s = clock()
        self.started_unix_s = time.time()
        self.ranks: dict[str, RankTotals] = {}
        self.spans: list[VerdictSpan] = []
        #: Seconds from the start to the first read that found a step (reads come every 0.5 s at most
        #: while none is seen); None until then.
        self.first_step_s: float | None = None
        self.last_verdict: dict[str, Any] | None = None
        self.job_name = ""
        self._analysis: Any = None
        self._source: Any = None
        self._host: Any = None
        self._gpu: Any = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="xfertop-run-summary", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        # Imported here, on this thread: the job starts without waiting for them.
        with contextlib.suppress(Exception):
            from xfertop.sources.jobs.source import JobsSource

            self._source = JobsSource(ring_dir=self.ring_dir, launch_token=self.launch_token)
            with contextlib.suppress(Exception):
                from xfertop.sources.host.source import HostSource

                self._host = HostSource()
            with contextlib.suppress(Exception):  # no driver, no NVML: the summary says GPU busy unknown
                from xfertop.sources.gpu.source import GpuSource

                self._gpu = GpuSource(pcie="off", first_window_s=0.0)
            judged_s = read_s = -float("inf")
            while not self._stop.is_set():
                now_s = self._clock()
                judge = now_s - judged_s >= self.interval_s
                judged_s = now_s if judge else judged_s
                counted = self._counted()
                self.read(final=False, judge=judge)
                wait_s = next_read_s(self._counted() - counted, now_s - read_s, self.interval_s)
                read_s = now_s
                self._stop.wait(wait_s)

    def _counted(self) -> int:
        """The most steps any rank has had counted (or lost) so far."""
        return max((known.next_step for known in list(self.ranks.values())), default=0)

    def read(self, final: bool, judge: bool = True) -> None:
        """One read of the rings: fold new steps and, if ``judge``, note the verdict. Never raises."""
        with self._lock, contextlib.suppress(Exception):
            if self._source is None:
                return
            # The GPU before the rings: a rank's heartbeat then tells whether it still stepped when NVML
            # was read (analysis/evidence.py, read_while_stepping).
            gpu = _sample(self._gpu) if judge and not final else None
            state: JobsState = self._source.sample()
            self._fold(state, final)
            if not judge:
                return
            if self._host is not None:
                live = {rank.pid for job in state.jobs for rank in job.ranks if rank.status != "finished"}
                self._host.watch_pids(live)
            self._note_verdict(state, _sample(self._host), gpu, final)

    def _fold(self, state: JobsState, final: bool) -> None:
        if self.first_step_s is None and any(rank.steps for job in state.jobs for rank in job.ranks):
            self.first_step_s = round(self._clock() - self.started_s, 1)
        for job in state.jobs:
            self.job_name = self.job_name or job.name
            for rank in job.ranks:
                known = self.ranks.setdefault(rank.ring_path, RankTotals(rank))
                known.fold(rank, final)

    def _note_verdict(self, state: JobsState, host: Any, gpu: Any, final: bool = False) -> None:
        from xfertop.analysis.job_analysis import analyse

        self._analysis = analyse(state, gpu, self._analysis, host=host)
        # Live jobs, and at the last read every job: a job that stopped stepping is judged once more on its
        # ring's last steps with the evidence its last live verdict had (job_analysis.analyse_job), the
        # window the live view freezes too, whenever each last looked; then it stays frozen. A job too
        # short to be seen live gets the verdict of its whole ring (not frozen: nothing came before it).
        unjudged = bool(self.spans) and self.spans[-1].kind == "warming-up"
        early = bool(self.last_verdict and self.last_verdict.get("evidence", {}).get("early"))
        judged = [
            job
            for job in self._analysis.jobs
            if job.live or final or unjudged or early or (not job.frozen and not self.spans)
        ]
        if not judged:
            return
        verdict = max(judged, key=lambda job: len(job.ranks)).verdict
        now_s = round(self._clock() - self.started_s, 1)
        self.last_verdict = verdict.to_dict()
        if self.spans and _same_span(self.spans[-1], verdict.kind, verdict.headline):
            last = self.spans[-1]
            self.spans[-1] = VerdictSpan(last.from_s, now_s, last.kind, verdict.headline)
        else:
            from_s = self.spans[-1].to_s if self.spans else 0.0
            if not self.spans and self.first_step_s is not None and self.first_step_s >= STARTING_SPAN_MIN_S:
                # Before its first step the job was starting (imports, building data and model): no verdict
                # held then, and the timeline says so rather than stretch the first verdict back to 0 s.
                self.spans.append(VerdictSpan(0.0, self.first_step_s, STARTING, "no training step yet"))
                from_s = self.first_step_s
            self.spans.append(VerdictSpan(from_s, now_s, verdict.kind, verdict.headline))

    def finish(self) -> None:
        """Stop the thread (waiting JOIN_TIMEOUT_S at most) and, if it stopped, read everything once more."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(JOIN_TIMEOUT_S)
        if not self._thread.is_alive():
            self.read(final=True)
        if self.spans:  # the last verdict held until the job ended, not only until the last read
            last = self.spans[-1]
            self.spans[-1] = VerdictSpan(last.from_s, round(self.duration_s(), 1), last.kind, last.headline)
        for source in (self._source, self._host, self._gpu):
            with contextlib.suppress(Exception):
                if source is not None:
                    source.close()

    def duration_s(self) -> float:
        return self._clock() - self.started_s
