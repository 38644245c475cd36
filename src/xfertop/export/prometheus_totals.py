"""The exporter's counters: per-rank step totals and per-GPU PCIe bytes, kept monotonic.

Rank totals are summed from the step records the jobs source hands over, each step counted exactly once
(keyed on the ring path and the step number). A step the ring overwrote before anyone read it still
counts in ``steps`` (its number is known from the next step read) and in ``steps_unseen``; its seconds
and bytes are unknown and count nowhere. GPU fields the reporter resolves a few steps later are added
when they arrive. PCIe bytes are the full-coverage throughput the GPU source measures (byte counters
or GPM) integrated over the time between its snapshots.

``TotalsState`` can be written to and read back from a small JSON file, so a restarted exporter carries
on from the totals it had published instead of starting again from what the rings still hold.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import TypeVar

from xfertop import wire
from xfertop.analysis.steps import between_iterations_ms, split_gap
from xfertop.model.gpu import GpuState
from xfertop.model.jobs import JobsState, RankState, StepRecord

#: A step whose GPU clock is still unresolved this many steps behind the newest is given up (the
#: reporter resolves within a few steps, and samples only one step in k <= 32 on short steps).
GPU_PENDING_STEPS = 128
STATE_VERSION = 1
#: Upper bounds (seconds) of the per-step data wait histogram's buckets, +Inf after them: factors of
#: 2 to 2.5 from 0.5 ms to 10 s, enough to tell a few long waits from many short ones.
DATA_WAIT_BUCKETS_S = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
T = TypeVar("T")


@dataclass
class RankTotals:
    """Sums over every step of one ring seen so far. Seconds and bytes are of the steps read."""

    #: Ring identity: a ring file replaced by a new one at the same path starts new totals.
    ring_created_unix_s: float
    #: When these totals start counting (``_created``): the ring's creation if every step since was read.
    counting_since_unix_s: float
    last_step: int = -1
    steps: int = 0
    steps_unseen: int = 0
    samples: int = 0
    step_seconds: float = 0.0
    data_wait_seconds: float = 0.0
    copy_cpu_seconds: float = 0.0
    h2d_bytes: int = 0
    copying_steps: int = 0
    pinned_steps: int = 0
    pageable_non_blocking_steps: int = 0
    #: Steps that made or marked a copy, bytes counted or not (what says copies were looked at).
    copied_steps: int = 0
    #: First steps of an iteration over a loader; of those, the ones whose iter() started the loader's
    #: workers, with their wall time and data wait (the persistent_workers rule weighs that wait).
    epoch_start_steps: int = 0
    worker_start_steps: int = 0
    worker_start_step_seconds: float = 0.0
    worker_start_data_wait_seconds: float = 0.0
    #: Steps read, by data wait: one count per DATA_WAIT_BUCKETS_S bound and one above (not cumulative).
    data_wait_bucket_steps: list[int] = field(default_factory=lambda: [0] * (len(DATA_WAIT_BUCKETS_S) + 1))
    #: The host's other parts (the model is what is left of the wall), and the steps whose model calls
    #: were seen (the loop's own work is measured) or that synced.
    loop_pre_seconds: float = 0.0
    sync_seconds: float = 0.0
    loop_post_seconds: float = 0.0
    #: Time between a loader's iterations where no step ran (the script's own code between epochs).
    between_iterations_seconds: float = 0.0
    partitioned_steps: int = 0
    synced_steps: int = 0
    optimizer_stepped_steps: int = 0
    gpu_timed_steps: int = 0
    gpu_timed_step_seconds: float = 0.0
    gpu_gap_seconds: float = 0.0
    #: Steps counted whose GPU clock had not arrived yet (step numbers), bounded by GPU_PENDING_STEPS.
    gpu_pending: list[int] = field(default_factory=list)
    #: The gpu_uuid label, fixed when the rank is first exported (a label that changed would split
    #: every counter into two series).
    gpu_uuid: str | None = None

    def add_step(self, step: StepRecord, gpu_expected: bool, previous: StepRecord | None = None) -> None:
        self.steps += 1
        self.samples += step.samples
        self.step_seconds += step.wall_ms / 1000
        self.data_wait_seconds += step.data_wait_ms / 1000
        self.data_wait_bucket_steps[bisect.bisect_left(DATA_WAIT_BUCKETS_S, step.data_wait_ms / 1000)] += 1
        self.copy_cpu_seconds += step.copy_cpu_ms / 1000
        self.loop_pre_seconds += step.loop_pre_ms / 1000
        self.sync_seconds += step.sync_ms / 1000
        self.loop_post_seconds += step.loop_post_ms / 1000
        self.between_iterations_seconds += between_iterations_ms(step, previous) / 1000
        self.partitioned_steps += step.partitioned
        self.synced_steps += step.synced
        self.optimizer_stepped_steps += step.optimizer_stepped
        self.h2d_bytes += step.h2d_bytes
        if step.h2d_bytes > 0:
            self.copying_steps += 1
            self.pinned_steps += step.pinned
            self.pageable_non_blocking_steps += step.pageable_non_blocking
        if step.copied or step.h2d_bytes > 0:
            self.copied_steps += 1
        self.epoch_start_steps += step.epoch_start
        if step.workers_started:
            self.worker_start_steps += 1
            self.worker_start_step_seconds += step.wall_ms / 1000
            self.worker_start_data_wait_seconds += step.data_wait_ms / 1000
        if not self.add_gpu_clock(step, previous) and gpu_expected:
            self.gpu_pending.append(step.step)
        self.last_step = step.step

    def add_gpu_clock(self, step: StepRecord, previous: StepRecord | None) -> bool:
        """Add the step's measured GPU idle gap if it has one: as far as the host's parts explain it
        (``split_gap``, without the copy calls a drained stream idles through: a reader's analysis adds
        those from the copy counter, as the live view does), so the share never passes 100%."""
        if step.gpu_gap_ms is None:
            return False
        self.gpu_timed_steps += 1
        self.gpu_timed_step_seconds += step.wall_ms / 1000
        idle = split_gap(step, previous)
        self.gpu_gap_seconds += (idle.total - idle.copy) / 1000
        return True


def _first_new(steps: tuple[StepRecord, ...], after_step: int) -> int:
    """The index of the first step numbered above ``after_step`` (read from the newest end)."""
    index = len(steps)
    while index and steps[index - 1].step > after_step:
        index -= 1
    return index


def accumulate(totals: RankTotals, rank: RankState) -> None:
    """Count the rank's steps not counted yet, and GPU clocks that arrived for steps counted before."""
    gpu_expected = rank.device.startswith("cuda")
    if totals.gpu_pending:
        _resolve_pending(totals, rank.steps)
    steps = rank.steps
    for index in range(_first_new(steps, totals.last_step), len(steps)):
        step = steps[index]
        # Steps between the last one counted and this one were overwritten before they were read.
        skipped = step.step - totals.last_step - 1
        totals.steps += skipped
        totals.steps_unseen += skipped
        totals.add_step(step, gpu_expected, steps[index - 1] if index else None)
    if totals.gpu_pending:
        oldest_kept = totals.last_step - GPU_PENDING_STEPS
        totals.gpu_pending = [number for number in totals.gpu_pending if number > oldest_kept]


def _resolve_pending(totals: RankTotals, steps: tuple[StepRecord, ...]) -> None:
    pending = set(totals.gpu_pending)
    oldest = min(pending)
    for index in range(len(steps) - 1, -1, -1):
        step = steps[index]
        if step.step < oldest:
            break
        if step.step in pending and totals.add_gpu_clock(step, steps[index - 1] if index else None):
            pending.discard(step.step)
    totals.gpu_pending = sorted(pending)


@dataclass
class PcieTotals:
    rx_bytes: float = 0.0
    tx_bytes: float = 0.0
    counting_since_unix_s: float = 0.0
    #: The GPU snapshot the last interval ended at (unix seconds).
    last_timestamp: float | None = None
    #: PCIe replays and correctable errors, summed over every run of the exporter. The GPU source gives
    #: counts since it started watching; ``*_seen`` is what this run's source had said last.
    replay_errors: int = 0
    correctable_errors: int = 0
    replay_seen: int = 0
    correctable_seen: int = 0

    def add_errors(self, replay_delta: int | None, correctable_delta: int | None) -> None:
        if replay_delta is not None:
            self.replay_errors += max(0, replay_delta - self.replay_seen)
            self.replay_seen = replay_delta
        if correctable_delta is not None:
            self.correctable_errors += max(0, correctable_delta - self.correctable_seen)
            self.correctable_seen = correctable_delta


def ring_created_unix_s(path: str) -> float | None:
    """When the ring at ``path`` was created (its header), or None if it cannot be read as a ring."""
    try:
        with open(path, "rb") as handle:
            header = handle.read(wire.HEADER_BYTES)
            size = os.fstat(handle.fileno()).st_size
        return wire.read_header(header, memoryview(header).cast("q"), size).created_unix_ns / 1e9
    except (OSError, ValueError, TypeError, wire.RingFormatError):
        return None


class TotalsState:
    """Every counter the exporter publishes, updated from the sources' threads, read by scrapes.

    A rank is dropped ``ended_grace_s`` after it was first seen finished (or after its ring was last
    seen): its totals are forgotten and it is not counted again while its ring is still there.
    """

    def __init__(
        self,
        ended_grace_s: float = 120.0,
        monotonic: Callable[[], float] = time.monotonic,
        created_of: Callable[[str], float | None] = ring_created_unix_s,
    ) -> None:
        self.lock = threading.Lock()
        self.ranks: dict[str, RankTotals] = {}
        self.pcie: dict[str, PcieTotals] = {}
        self.ended_grace_s = ended_grace_s
        self._monotonic = monotonic
        self._created_of = created_of
        #: Ring path -> when (monotonic s) it was first seen finished, or last seen at all.
        self._ended_since: dict[str, float] = {}
        self._absent_since: dict[str, float] = {}
        #: Rings dropped after their grace period, while they are still listed: not counted again.
        self.dropped: set[str] = set()

    # -- updates ----------------------------------------------------------------------------------
    def on_jobs(self, jobs: JobsState) -> None:
        """Count the new steps of every rank, and drop ranks ended (or gone) longer than the grace."""
        now_s = self._monotonic()
        listed = {rank.ring_path: rank for job in jobs.jobs for rank in job.ranks}
        with self.lock:
            self.dropped &= set(listed)
            for path, rank in listed.items():
                self._absent_since.pop(path, None)
                if path in self.dropped:
                    continue
                if rank.status == "finished":
                    ended_s = self._ended_since.setdefault(path, now_s)
                    if now_s - ended_s > self.ended_grace_s:
                        self._drop(path)
                        continue
                self._count(path, rank, jobs.timestamp)
            for path in set(self.ranks) - set(listed):
                absent_s = self._absent_since.setdefault(path, now_s)
                if now_s - absent_s > self.ended_grace_s:
                    self._drop(path)
                    self.dropped.discard(path)

    def _count(self, path: str, rank: RankState, now_unix_s: float) -> None:
        totals = self.ranks.get(path)
        if totals is None:
            created = self._created_of(path)
            if created is None:
                return
            first_held = rank.steps[0].step if rank.steps else 0
            # Counting from the ring's creation holds only while the ring still has its step 0.
            since = created if first_held == 0 else now_unix_s
            totals = self.ranks[path] = RankTotals(ring_created_unix_s=created, counting_since_unix_s=since)
        accumulate(totals, rank)

    def _drop(self, path: str) -> None:
        self.ranks.pop(path, None)
        self._ended_since.pop(path, None)
        self._absent_since.pop(path, None)
        self.dropped.add(path)

    def rank_totals(self, path: str) -> RankTotals | None:
        with self.lock:
            return self.ranks.get(path)

    def on_gpu(self, state: GpuState) -> None:
        """Integrate each GPU's full-coverage PCIe throughput over the interval since its last snapshot,
        and add its new PCIe errors."""
        with self.lock:
            for gpu in state.gpus:
                totals = self.pcie.get(gpu.uuid)
                if totals is None:
                    totals = self.pcie[gpu.uuid] = PcieTotals(counting_since_unix_s=state.timestamp)
                pcie = gpu.pcie
                full = pcie.method in ("counter", "gpm")
                if full and totals.last_timestamp is not None and state.timestamp > totals.last_timestamp:
                    interval_s = state.timestamp - totals.last_timestamp
                    totals.rx_bytes += (pcie.rx_bytes_per_s or 0.0) * interval_s
                    totals.tx_bytes += (pcie.tx_bytes_per_s or 0.0) * interval_s
                totals.last_timestamp = state.timestamp if full else None
                totals.add_errors(gpu.errors.replay_delta, gpu.errors.correctable_delta)

    # -- persistence --------------------------------------------------------------------------------
    def to_json(self) -> str:
        with self.lock:
            document = {
                "version": STATE_VERSION,
                "ranks": {path: asdict(totals) for path, totals in self.ranks.items()},
                "pcie": {uuid: asdict(totals) for uuid, totals in self.pcie.items()},
                "dropped": sorted(self.dropped),
            }
        return json.dumps(document, separators=(",", ":"))

    def load_json(self, text: str) -> None:
        """Take over the totals of a previous run; raises ValueError for a file it cannot use."""
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not JSON ({exc})") from None
        if not isinstance(document, dict) or document.get("version") != STATE_VERSION:
            raise ValueError(f"not an xfertop exporter state (version {STATE_VERSION})")
        try:
            ranks = {path: _build(RankTotals, values) for path, values in document["ranks"].items()}
            pcie = {uuid: _build(PcieTotals, values) for uuid, values in document["pcie"].items()}
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"damaged ({type(exc).__name__}: {exc})") from None
        buckets = len(DATA_WAIT_BUCKETS_S) + 1
        for rank in ranks.values():
            counts = rank.data_wait_bucket_steps
            if not (isinstance(counts, list) and len(counts) == buckets):
                rank.data_wait_bucket_steps = [0] * buckets  # other bounds: the histogram starts again
        for totals in pcie.values():
            totals.last_timestamp = None  # the exporter was down meanwhile: that traffic is unknown
            totals.replay_seen = totals.correctable_seen = 0  # a new GPU source counts from zero
        dropped = document.get("dropped", [])
        with self.lock:
            self.ranks, self.pcie = ranks, pcie
            # Ended ranks already dropped stay dropped while their rings are still listed.
            self.dropped = {path for path in dropped if isinstance(path, str)}


def _build(cls: type[T], values: dict) -> T:
    names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    return cls(**{name: value for name, value in values.items() if name in names})


def write_atomically(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename (never half a file), mode 0600."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(prefix=".exporter-", dir=directory)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
