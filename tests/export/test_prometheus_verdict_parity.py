"""Local and remote analysis agree: a rank read from its ring and the same rank read back from a real
Prometheus (`xfertop export`, scraped every second, then `xfertop --prometheus`'s source) get the same
verdict, the same advice and the same end.

Three cases the local verdict decides on more than the interval means:
- a GPU rank under `xfertop run` whose steps copy nothing: copies were timed, so its 0% copy share is a
  fact ("Do not tune PCIe"); without the copy_timing gauge the remote side read "not measured"; and it
  runs with two debugging switches on and a busy Python thread beside it, whose advice leads on both
  sides;
- a job whose DataLoader starts its workers again every epoch and that exits with code 3: the
  persistent_workers rule needs the worker-start steps flagged and their wait; the end needs the exit;
- a job whose waits are bursty (a few long ones among short ones): the prefetch_factor advice needs the
  spread of the waits, which the data-wait histogram carries.

The rings are written by the reporter's RingWriter in this process, in bursts, each burst scraped before
the next (so every scrape interval is known and the rebuilt records are exactly the steps), and once by
a real job under the real `xfertop run`.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from export.prometheus_cluster import (
    PROMETHEUS,
    XFERTOP,
    ExporterProcess,
    PrometheusServer,
    free_port,
)
from ring_test_tools import child_env, wait_until
from xfertop import wire
from xfertop.analysis.job_analysis import JobAnalysis, analyse
from xfertop.model.jobs import JobsState
from xfertop.reporter._identity import current_identity
from xfertop.reporter._ring_writer import RingWriter
from xfertop.sources.jobs.prometheus_jobs import PrometheusJobsSource
from xfertop.sources.jobs.source import JobsSource

pytestmark = pytest.mark.skipif(
    PROMETHEUS is None, reason="the prometheus binary is absent (Debian: apt-get install prometheus)"
)

MS = 1_000_000


@dataclass
class Node:
    prometheus: PrometheusServer
    exporter: ExporterProcess
    rings: Path
    tmp: Path


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    tmp = tmp_path_factory.mktemp("parity")
    rings = tmp / "rings"
    rings.mkdir(mode=0o700)
    prometheus = PrometheusServer(tmp)
    exporter = None
    try:
        exporter = ExporterProcess(rings, "node-p", free_port(), tmp / "state.json")
        prometheus.add_target("node-p", exporter.address)
        yield Node(prometheus, exporter, rings, tmp)
    finally:
        if exporter is not None:
            exporter.stop()
        prometheus.stop()


class Ring:
    """A ring of this process, as the reporter writes it, for the job ``run_id``."""

    def __init__(self, rings: Path, run_id: str, device: str) -> None:
        identity = dataclasses.replace(
            current_identity(), run_id=run_id, rank=0, local_rank=0, world_size=1, argv=("python", run_id)
        )
        self.writer = RingWriter(str(rings), identity, capacity=256)
        self.writer.set_device(device)
        self.run_id = run_id
        self.steps = 0
        # Steps follow each other on the ring's own clock, as a loop's do, however long the test waits
        # for a scrape between them; time between iterations only where a step asks for it.
        self._next_start_ns = time.perf_counter_ns()

    def step(
        self,
        wall_ms: float,
        wait_ms: float,
        flags: int = 0,
        gap_ms: float | None = None,
        parts_ms: tuple[float, float, float] = (0.0, 0.0, 0.0),
        between_ms: float = 0.0,
    ) -> None:
        """One step, no copy marked; ``gap_ms``: the GPU's measured idle gap, resolved after the step;
        ``parts_ms``: the loop's own work before the model, syncs and the loop's work after it;
        ``between_ms``: time with no step before it (an iteration's first step: the code between epochs)."""
        start_ns = self._next_start_ns + int(between_ms * MS)
        self._next_start_ns = start_ns + int(wall_ms * MS)
        loop_pre_ms, sync_ms, loop_post_ms = parts_ms
        self.writer.write_step(
            self.steps,
            start_ns,
            int(wall_ms * MS),
            int(wait_ms * MS),
            0,
            int(loop_pre_ms * MS),
            int(sync_ms * MS),
            wire.NO_VALUE,
            0,
            8,
            flags | wire.F_GPU_PENDING * (gap_ms is not None),
            int(loop_post_ms * MS),
        )
        if gap_ms is not None:
            self.writer.patch_gpu(self.steps, int(gap_ms * MS), wire.F_GPU_RESOLVED, wire.F_GPU_PENDING)
        self.steps += 1


def _scraped_steps(prometheus: PrometheusServer, run_id: str) -> int | None:
    found = prometheus.query(f'xfertop_rank_steps_total{{job_id="run:{run_id}"}}')
    return int(float(found[0]["value"][1])) if found else None


def _wait_scraped(prometheus: PrometheusServer, rings: list[Ring]) -> None:
    """Until Prometheus's latest scrape holds every step written so far (the end of one interval)."""
    for ring in rings:
        wait_until(
            lambda ring=ring: _scraped_steps(prometheus, ring.run_id) == ring.steps,
            30.0,
            f"{ring.steps} steps of {ring.run_id} scraped",
            every_s=0.1,
        )


def _job(state: JobsState, key: str) -> JobAnalysis:
    analysis = analyse(state, None)
    found = analysis.job(key)
    assert found is not None, [job.job.job_key for job in analysis.jobs]
    return found


def _masked(lines: tuple[str, ...]) -> list[str]:
    return [re.sub(r"\d+", "N", line) for line in lines]


def _epoch(ring: Ring, steps: int, between_ms: float = 0.0) -> None:
    """An epoch whose iter(loader) starts the workers again: 300 ms of wait in its first step; and
    ``between_ms`` of the script's own code before it."""
    ring.step(320.0, 300.0, wire.F_EPOCH_START | wire.F_WORKERS_STARTED, between_ms=between_ms)
    for _ in range(steps - 1):
        ring.step(20.0, 1.0)


def test_rings_read_back_from_prometheus_get_the_local_verdict_advice_and_end(node: Node) -> None:
    timed = Ring(node.rings, "parity-copy-timing", "cuda:0")
    # Copies timed, and two debugging switches left on (each leads the advice on both sides).
    timed.writer.set_word(
        wire.H_STATE_FLAGS, wire.STATE_COPY_TIMING | wire.STATE_ANOMALY_DETECTION | wire.STATE_LAUNCH_BLOCKING
    )
    timed.writer.set_busy_thread("metrics", 920)  # and a Python thread of its own busy beside the loop
    epochs = Ring(node.rings, "parity-epochs", "cpu")
    epochs.writer.set_word(wire.H_WORKERS, 2)
    bursty = Ring(node.rings, "parity-bursty", "cpu")
    bursty.writer.set_word(wire.H_WORKERS, 2)
    # The same epochs with 1.5 s of the script's own code between them (an evaluation, an upload).
    between = Ring(node.rings, "parity-between", "cpu")
    between.writer.set_word(wire.H_WORKERS, 2)
    # A job's own prefetching thread reads the loader (its waits are not the loop's), and its optimizers
    # step host memory: facts of the state word, not of the steps.
    prefetched = Ring(node.rings, "parity-prefetched", "cuda:0")
    prefetched.writer.set_word(
        wire.H_STATE_FLAGS, wire.STATE_COPY_TIMING | wire.STATE_LOADER_OFF_THREAD | wire.STATE_CPU_OPTIMIZER
    )
    rings = [timed, epochs, bursty, between, prefetched]
    _wait_scraped(node.prometheus, rings)  # 0 steps: every later step falls in a scraped interval
    for burst in (5, 8, 11, 8, 8):
        for _ in range(burst):
            # `xfertop run`: the loop's work and the loss.item() each step measured, the GPU's gap too.
            timed.step(
                10.0,
                0.2,
                wire.F_PARTITIONED | wire.F_SYNCED,
                gap_ms=0.1,
                parts_ms=(0.2, 0.3, 0.1),
            )
            # Persistent workers that mostly keep up: every fifth batch takes 30 ms, the others 2 ms.
            wait_ms = 30.0 if bursty.steps % 5 == 4 else 2.0
            bursty.step(20.0 + wait_ms, wait_ms)
            prefetched.step(12.0, 6.0, wire.F_PARTITIONED, gap_ms=0.5, parts_ms=(0.2, 0.3, 0.1))
        _epoch(epochs, burst)
        _epoch(between, burst, between_ms=1500.0 if between.steps else 0.0)
        _wait_scraped(node.prometheus, rings)
    epochs.writer.set_word(wire.H_LAUNCH_EXIT, wire.encode_launch_exit(3, None))
    epochs.writer.close()
    wait_until(
        lambda: node.prometheus.query('xfertop_rank_end_info{job_id="run:parity-epochs"}'),
        30.0,
        "the epochs job's end scraped",
        every_s=0.1,
    )
    # The live rings stopped stepping: judged as such on both sides once their heartbeat is clearly old
    # (the last scrape's age, plus the time since that scrape, on the remote side).
    wait_until(
        lambda: node.prometheus.query('xfertop_rank_heartbeat_age_seconds{job_id="run:parity-bursty"} > 2'),
        30.0,
        "a heartbeat 2 s old scraped",
        every_s=0.1,
    )
    local_state = JobsSource(ring_dir=str(node.rings)).sample_once()
    remote_state = PrometheusJobsSource(node.prometheus.url, window_s=120).sample()
    assert remote_state.error is None
    for key in ("run:parity-copy-timing", "run:parity-epochs", "run:parity-between", "run:parity-prefetched"):
        local, remote = _job(local_state, key), _job(remote_state, key)
        assert remote.verdict.to_dict() == local.verdict.to_dict(), key
        assert (remote.ended_how, remote.failed) == (local.ended_how, local.failed), key
    timed_verdict = _job(remote_state, "run:parity-copy-timing").verdict
    assert timed_verdict.kind == "compute-bound"
    # The host's parts and the GPU's gaps come back from their counters.
    evidence = timed_verdict.evidence
    assert (evidence["host_loop_pre_share"], evidence["host_sync_share"]) == (0.02, 0.03)
    assert evidence["partitioned"] is True and evidence["synced_step_fraction"] == 1.0
    assert evidence["gpu_idle_in"]["loop_pre"] == 0.01  # the 0.1 ms gap, in the loop's work before the model
    assert timed_verdict.advice[0].startswith("Autograd anomaly detection is on")
    assert timed_verdict.advice[1].startswith("CUDA_LAUNCH_BLOCKING=1 is set")
    assert timed_verdict.advice[2].startswith(
        'A Python thread of the job\'s own ("metrics") ran 92% of a core'
    )
    assert any(
        line.startswith("Do not tune PCIe: host-to-device copies are only 0%")
        for line in timed_verdict.advice
    )
    # The few long waits among short ones survive in the data-wait histogram; the milliseconds the advice
    # quotes are its buckets', so they are masked.
    local, remote = _job(local_state, "run:parity-bursty"), _job(remote_state, "run:parity-bursty")
    for name in ("kind", "severity", "headline"):
        assert getattr(remote.verdict, name) == getattr(local.verdict, name), name
    assert _masked(remote.verdict.advice) == _masked(local.verdict.advice)
    assert any(line.startswith("Waits are bursty") for line in remote.verdict.advice)
    epochs_job = _job(remote_state, "run:parity-epochs")
    assert epochs_job.verdict.kind == "input-bound"
    assert "set persistent_workers=True" in epochs_job.verdict.advice[0]
    assert (epochs_job.ended_how, epochs_job.failed) == (("exited 3",), True)
    (prefetched_rank,) = _job(remote_state, "run:parity-prefetched").ranks
    assert prefetched_rank.rank.loader_off_thread and prefetched_rank.rank.cpu_optimizer
    assert _job(remote_state, "run:parity-prefetched").verdict.evidence.get("loader_off_thread") is True
    between_job = _job(remote_state, "run:parity-between")
    assert between_job.verdict.kind == "loop-bound", between_job.verdict.headline
    assert "between the loader's iterations" in between_job.verdict.headline


EPOCHS_JOB = """
import sys, time
import torch
from torch.utils.data import DataLoader, Dataset

def slow_start(_worker_id):
    time.sleep(0.25)  # each worker's start-up, every epoch (persistent_workers=False)

class Numbers(Dataset):
    def __len__(self):
        return 8 * 4

    def __getitem__(self, index):
        return torch.full((4,), float(index))

loader = DataLoader(Numbers(), batch_size=4, num_workers=2, worker_init_fn=slow_start)
for epoch in range(5):
    for batch in loader:
        time.sleep(0.04)
sys.exit(3)
"""

#: The verdict's numbers that rest on sums over the window (the same from interval means as from the
#: steps); p50/p95 of interval means are not those of single steps, so they are left out.
SUMMED = (
    "clock",
    "steps",
    "first_step",
    "last_step",
    "data_wait_share",
    "copy_share",
    "compute_share",
    "host_loop_pre_share",
    "host_sync_share",
    "host_loop_post_share",
    "copied_step_fraction",
    "worker_start_steps",
    "worker_start_wait_share",
    "copies_measured",
    "dataloader_workers",
    "early",
)


def _job_of_pid(state: JobsState, pid: int) -> JobAnalysis:
    analysis = analyse(state, None)
    return next(job for job in analysis.jobs if any(rank.rank.pid == pid for rank in job.ranks))


def test_a_real_job_restarting_its_workers_reads_the_same_from_prometheus(node: Node) -> None:
    script = node.tmp / "epochs.py"
    script.write_text(textwrap.dedent(EPOCHS_JOB))
    done = subprocess.run(
        [*XFERTOP, "run", "--no-summary", "--", sys.executable, str(script)],
        env=child_env(node.rings),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 3, done.stderr
    local_state = JobsSource(ring_dir=str(node.rings)).sample_once()
    [rank] = [r for job in local_state.jobs for r in job.ranks if r.argv[-1] == str(script)]
    assert rank.end is not None and rank.copy_timing
    wait_until(
        # The ring closes at the interpreter's exit; `xfertop run` records the exit code after its reap.
        lambda: node.prometheus.query(f'xfertop_rank_end_info{{pid="{rank.pid}",exit_code="3"}}'),
        30.0,
        "the job's exit code scraped",
        every_s=0.1,
    )
    # The steps both sides see: from the first scrape of the rank on (the exporter names a CPU rank once
    # it has taken a few steps; what came before is in no scrape interval).
    [series] = node.prometheus.api("query", query=f'xfertop_rank_steps_total{{pid="{rank.pid}"}}[5m]')[
        "result"
    ]
    first_scraped = int(float(series["values"][0][1]))
    seen = dataclasses.replace(rank, steps=tuple(s for s in rank.steps if s.step >= first_scraped))
    [job] = [job for job in local_state.jobs if rank in job.ranks]
    local_state = dataclasses.replace(local_state, jobs=(dataclasses.replace(job, ranks=(seen,)),))
    local = _job_of_pid(local_state, rank.pid)
    remote = _job_of_pid(PrometheusJobsSource(node.prometheus.url, window_s=300).sample(), rank.pid)
    assert local.verdict.kind == "input-bound", local.verdict.headline
    assert "set persistent_workers=True" in local.verdict.advice[0]
    assert local.verdict.evidence["worker_start_steps"] >= 3
    for name in ("kind", "severity", "headline", "advice"):
        assert getattr(remote.verdict, name) == getattr(local.verdict, name), name
    for name in SUMMED:
        assert remote.verdict.evidence[name] == pytest.approx(local.verdict.evidence[name], abs=1e-3), name
    assert (remote.ended_how, remote.failed) == (local.ended_how, local.failed) == (("exited 3",), True)
