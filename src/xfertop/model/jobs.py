"""Training jobs as the viewer sees them: ranks read from ring files, grouped into jobs.

The ring's wire format lives in xfertop.wire; sources.jobs turns ring records into these.
Times are milliseconds; the GPU gap is None where the step had no CUDA timing.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import Literal

RankStatus = Literal["live", "stalled", "finished"]


@dataclass(frozen=True)
class StepRecord:
    """One step on the host's clock, in six parts that add up to its wall time (``model_ms`` is what is
    left), and the GPU's own idle gap before the step's first work where it was measured."""

    step: int
    #: Wall time from this step's next() call to the next step's next() call (CPU clock).
    wall_ms: float
    #: Time blocked in next(loader).
    data_wait_ms: float
    #: Host time spent in the copy call(s): large when copies from pageable memory are synchronous.
    copy_cpu_ms: float
    #: The loop's own work between the batch's arrival and the step's first copy or model call.
    loop_pre_ms: float
    #: Host time blocked in syncs with the device (.item(), .tolist(), .cpu(), synchronize).
    sync_ms: float
    #: The loop's own work after the model's last backward or optimizer step.
    loop_post_ms: float
    #: How long the GPU sat idle before this step's first work (0: work was still queued then); None
    #: where not measured (no GPU, a step the reporter did not time, events not resolved yet).
    gpu_gap_ms: float | None
    h2d_bytes: int
    samples: int
    #: Every copied tensor of the step came from pinned memory.
    pinned: bool
    #: non_blocking=True was asked of a pageable source (silently synchronous).
    pageable_non_blocking: bool
    #: When the step began (its next() call; for an iteration's first step, its iter() call),
    #: CLOCK_MONOTONIC ns: one host's processes share this clock.
    start_monotonic_ns: int = 0
    #: A copy was made or marked this step.
    copied: bool = False
    #: The first step of an iteration over a loader (an epoch, a validation pass): its data wait
    #: includes iter(loader) ...
    epoch_start: bool = False
    #: ... which started the loader's worker processes (num_workers > 0, persistent_workers=False).
    workers_started: bool = False
    #: torch.save ran inside this step (`xfertop run`): its wall holds a checkpoint.
    checkpoint: bool = False
    #: The model's calls were seen (`xfertop run`): loop_pre and loop_post are measured, not 0 by default.
    partitioned: bool = False
    #: A sync with the device ran in this step.
    synced: bool = False
    #: `xfertop probe` replayed this step's batch: not how the job runs (no verdict rests on it).
    probe_replay: bool = False
    #: num_workers of the loader this step's batch came from (None: not known, or no loader's step).
    loader_workers: int | None = None
    #: The time between a loader's iterations before this step, where a source gives it directly
    #: (Prometheus counters have no start times); None: measured from the steps' starts.
    between_before_ms: float | None = None
    #: A pass over another loader (validation every N steps) ran inside this step, after its model
    #: (`xfertop run`): its waits are in the step's data wait, its model calls in its loop_post.
    nested_pass: bool = False
    #: The step's pass or checkpoint (one kind, not both) on the GPU's own clock, from the work queued
    #: before it having run to its own work having run: what it cost the job, where its host wall may hold
    #: the queued training work its sync waited for. None: not measured (no GPU clock, neither or both).
    periodic_gpu_ms: float | None = None
    #: An optimizer (torch.optim) stepped in this step: the parameters are not updated by hand.
    optimizer_stepped: bool = False

    @property
    def model_ms(self) -> float:
        """Forward, backward and optimizer step on the host: the wall less every other part."""
        rest = self.data_wait_ms + self.loop_pre_ms + self.copy_cpu_ms + self.sync_ms + self.loop_post_ms
        return max(0.0, self.wall_ms - rest)


@dataclass(frozen=True)
class RankEnd:
    """How a rank's process ended, as far as the viewer can know."""

    #: The reporter closed its ring at interpreter exit (a normal end: the script returned, sys.exit).
    closed_ring: bool
    #: Exit status of the command `xfertop run` started, where this rank is that command or one of its
    #: children (torchrun's ranks): None when no launcher recorded one.
    exit_code: int | None = None
    #: The signal that ended that command, if a signal did (then exit_code is None).
    signal: int | None = None

    @property
    def failed(self) -> bool:
        """Known to have ended badly: a non-zero exit, a signal, or no orderly close of the ring."""
        if self.signal is not None:
            return True
        if self.exit_code is not None:
            return self.exit_code != 0
        return not self.closed_ring

    def describe(self) -> str:
        """ "exited 0", "killed by SIGKILL", "exited 1", "ended without closing its ring", "ended"."""
        if self.signal is not None:
            try:
                name = signal.Signals(self.signal).name
            except ValueError:
                name = f"signal {self.signal}"
            return f"killed by {name}"
        if self.exit_code is not None:
            return f"exited {self.exit_code}"
        return "ended" if self.closed_ring else "ended without closing its ring"


@dataclass(frozen=True)
class RankState:
    pid: int
    host: str
    rank: int | None
    local_rank: int | None
    world_size: int | None
    #: TORCHELASTIC_RUN_ID, else MASTER_ADDR:PORT, else the parent pid: what groups ranks into a job.
    job_key: str
    device: str
    argv: tuple[str, ...]
    status: RankStatus
    #: Seconds since the reporter last wrote a heartbeat.
    heartbeat_age_s: float
    #: Most recent steps, oldest first (the ring's history: a late viewer still sees them).
    steps: tuple[StepRecord, ...]
    pinned_host_bytes: int | None
    dataloader_workers: int | None
    reporter_errors: int
    reporter_disabled: bool
    ring_path: str
    #: Steps the viewer never saw because the ring wrapped before it read them.
    steps_lost: int = 0
    #: Steps whose GPU timing was given up (too many pending CUDA events).
    gpu_steps_dropped: int = 0
    #: `xfertop run` timed every Tensor.to/.cuda: a step that shows no copy copied nothing.
    copy_timing: bool = False
    #: A watched loader is read on a thread other than the main one (the job's own prefetcher): the
    #: step clock's data waits are that thread's, not the training loop's.
    loader_off_thread: bool = False
    #: The process's optimizers step mostly host memory (wire.STATE_CPU_OPTIMIZER): on a GPU job, their
    #: step is host arithmetic the GPU waits for, not kernel launches.
    cpu_optimizer: bool = False
    #: Debugging switches the process runs with, each a slowdown of every step (wire.DEBUG_SWITCHES'
    #: names: "anomaly_detection", "profiler", "python_tracer", "cuda_launch_blocking",
    #: "no_cuda_caching_allocator", "empty_cache_every_step").
    debug_switches: tuple[str, ...] = ()
    #: The busiest Python thread of the job's own other than the training loop's, where it used 30% of
    #: a core or more over the reporter's last second ("" otherwise), and that share of a core: threads take
    #: turns on one GIL, so a busy one holds the loop's own Python back.
    busy_thread: str = ""
    busy_thread_share: float = 0.0
    #: The share of the loop's own work before the model and after the step in which the loop's thread
    #: was blocked: neither on a CPU nor waiting for one (a queue's get() for a producer's batches, a sleep,
    #: a read, an fsync), over the reporter's recent sampled steps (`xfertop run` only); None where not
    #: known.
    loop_pre_blocked_share: float | None = None
    loop_post_blocked_share: float | None = None
    #: How the process ended: None while it runs (status live or stalled).
    end: RankEnd | None = None


@dataclass(frozen=True)
class JobState:
    job_key: str
    name: str
    ranks: tuple[RankState, ...]


@dataclass(frozen=True)
class ProbeRank:
    """One rank's figures from an `xfertop probe` (docs/probe.md); a speed-up is None where its phase
    was not reached."""

    rank: int | None
    baseline_step_s: float | None
    speedup_input_free: float | None
    speedup_pinned: float | None
    speedup_copy_free: float | None
    #: Replayed host tensors the probe moved to pinned memory (0: the pinned phase was input free again).
    tensors_pinned: int = 0
    #: Replayed tensors whose device copy was handed back (0: the copy-free phase was input free again).
    copies_made_resident: int = 0


@dataclass(frozen=True)
class ProbeRecord:
    """An `xfertop probe` of a script, as kept in ``<ring directory>/probes/``."""

    job: str  # the script, named as a job is (``train.py``)
    argv: tuple[str, ...]
    finished_unix_s: float
    complete: bool
    ranks: tuple[ProbeRank, ...]


@dataclass(frozen=True)
class JobsState:
    timestamp: float
    jobs: tuple[JobState, ...]
    ring_dir: str
    #: Files the viewer could not use, each with a one-line reason (unknown version, foreign owner...).
    problems: tuple[str, ...] = ()
    error: str | None = None
    #: The probes kept in the ring directory, newest first.
    probes: tuple[ProbeRecord, ...] = ()
