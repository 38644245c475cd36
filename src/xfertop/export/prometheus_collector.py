"""The exporter's metric families, built at each scrape from the sources' latest snapshots.

A ``prometheus_client`` custom collector: nothing is sampled here. Counters come from ``TotalsState``
(fed by the sources' listeners); gauges and state sets from the latest GPU, host and jobs snapshots and
their analysis (kept from one scrape to the next, so an ended job keeps its last live verdict).
docs/exporter.md lists every family and its labels.
"""

from __future__ import annotations

import itertools
import signal
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import get_args

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
    StateSetMetricFamily,
)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from xfertop.analysis.job_analysis import Analysis, RankAnalysis, analyse
from xfertop.analysis.pcie_link import link_bytes_per_s
from xfertop.analysis.verdict import VerdictKind
from xfertop.export.prometheus_totals import DATA_WAIT_BUCKETS_S, RankTotals, TotalsState
from xfertop.model.gpu import GpuSnapshot, GpuState
from xfertop.model.host import HostState, ProcessStats
from xfertop.model.jobs import JobsState, RankEnd, RankState, RankStatus
from xfertop.model.rank_gpu import rank_gpu
from xfertop.sources.gpu.gpu_facts import THROTTLE_WORDS
from xfertop.wire import DEBUG_SWITCHES

GPU_LABELS = ("host", "gpu", "uuid", "name")
RANK_LABELS = ("host", "job_name", "job_id", "rank", "local_rank", "pid", "gpu_uuid")
JOB_LABELS = ("host", "job_name", "job_id")
VERDICT_KINDS: tuple[str, ...] = get_args(VerdictKind)
RANK_STATUSES: tuple[str, ...] = get_args(RankStatus)
THROTTLE_REASONS = tuple(THROTTLE_WORDS.values())
#: A rank with this many steps and no device yet is taken to copy nothing: its gpu_uuid label is "".
DEVICE_SETTLED_STEPS = 5

#: (metric name without _total, help, RankTotals field)
RANK_COUNTERS: tuple[tuple[str, str, str], ...] = (
    (
        "xfertop_rank_steps",
        "Training steps since the ring was created, those overwritten unread included",
        "steps",
    ),
    (
        "xfertop_rank_steps_unseen",
        "Steps overwritten in the ring before they were read: counted in "
        "xfertop_rank_steps, absent from every seconds and bytes counter",
        "steps_unseen",
    ),
    ("xfertop_rank_samples", "Samples (batch size summed over steps)", "samples"),
    ("xfertop_rank_step_seconds", "Wall time of the steps (CPU clock, next() to next())", "step_seconds"),
    ("xfertop_rank_data_wait_seconds", "Time blocked in next(loader) (CPU clock)", "data_wait_seconds"),
    (
        "xfertop_rank_copy_cpu_seconds",
        "Host time inside the host-to-device copy calls (CPU clock)",
        "copy_cpu_seconds",
    ),
    ("xfertop_rank_h2d_bytes", "Bytes copied host to device", "h2d_bytes"),
    ("xfertop_rank_copying_steps", "Steps that copied bytes host to device", "copying_steps"),
    ("xfertop_rank_pinned_steps", "Copying steps whose every source was pinned memory", "pinned_steps"),
    (
        "xfertop_rank_pageable_non_blocking_steps",
        "Copying steps that asked non_blocking of pageable memory (silently synchronous)",
        "pageable_non_blocking_steps",
    ),
    (
        "xfertop_rank_copied_steps",
        "Steps that made or marked a host-to-device copy, bytes counted or not",
        "copied_steps",
    ),
    (
        "xfertop_rank_epoch_start_steps",
        "First steps of an iteration over a loader (an epoch, a validation pass): their data wait "
        "includes iter(loader)",
        "epoch_start_steps",
    ),
    (
        "xfertop_rank_worker_start_steps",
        "Epoch-start steps whose iter(loader) started the loader's worker processes "
        "(num_workers > 0 without persistent_workers)",
        "worker_start_steps",
    ),
    (
        "xfertop_rank_worker_start_step_seconds",
        "Wall time of the worker-start steps (CPU clock)",
        "worker_start_step_seconds",
    ),
    (
        "xfertop_rank_worker_start_data_wait_seconds",
        "Time the worker-start steps were blocked in iter(loader) and next(loader) (CPU clock)",
        "worker_start_data_wait_seconds",
    ),
    (
        "xfertop_rank_gpu_timed_steps",
        "Steps timed on the GPU clock (CUDA events; sampled on short steps)",
        "gpu_timed_steps",
    ),
    (
        "xfertop_rank_gpu_timed_step_seconds",
        "Wall time of the GPU-timed steps: the denominator of the GPU-clock shares",
        "gpu_timed_step_seconds",
    ),
    (
        "xfertop_rank_gpu_gap_seconds",
        "The GPU's measured idle over the GPU-timed steps, as far as the host's step explains it",
        "gpu_gap_seconds",
    ),
    ("xfertop_rank_loop_pre_seconds", "The loop's own work before the model (CPU clock)", "loop_pre_seconds"),
    ("xfertop_rank_sync_seconds", "Host time blocked in syncs with the device (CPU clock)", "sync_seconds"),
    (
        "xfertop_rank_loop_post_seconds",
        "The loop's own work after the model's backward or optimizer step (CPU clock)",
        "loop_post_seconds",
    ),
    (
        "xfertop_rank_between_iterations_seconds",
        "Time between a loader's iterations in which no step ran: the script's own code between epochs "
        "(CPU clock)",
        "between_iterations_seconds",
    ),
    (
        "xfertop_rank_partitioned_steps",
        "Steps whose model calls were seen (`xfertop run`): the loop's own work is measured",
        "partitioned_steps",
    ),
    ("xfertop_rank_synced_steps", "Steps that synced with the device", "synced_steps"),
    (
        "xfertop_rank_optimizer_stepped_steps",
        "Steps in which a torch.optim optimizer stepped",
        "optimizer_stepped_steps",
    ),
)


def _unit_of(name: str) -> str:
    """OpenMetrics' unit of a family: the base unit its name ends with."""
    return next((unit for unit in ("seconds", "bytes") if name.endswith(f"_{unit}")), "")


def _label(value: object) -> str:
    return "" if value is None else str(value)


def _gauge(name: str, help_text: str, labels: Iterable[str], unit: str = "") -> GaugeMetricFamily:
    return GaugeMetricFamily(name, help_text, labels=list(labels), unit=unit)


class XfertopCollector(Collector):
    """Metric families of one node. ``latest``: a callable returning (gpu, host, jobs) snapshots."""

    def __init__(
        self,
        latest: Callable[[], tuple[GpuState | None, HostState | None, JobsState | None]],
        totals: TotalsState,
        host_label: str,
        failing: Callable[[], dict[str, bool]] | None = None,
    ) -> None:
        """``failing``: each source's name, and whether its samples fail now (xfertop_source_failing)."""
        self._latest = latest
        self._failing = failing
        self._totals = totals
        self._host_label = host_label
        self._previous: Analysis | None = None
        #: Called after the families of a scrape are built (the exporter saves its state there).
        self.after_collect: Callable[[], None] | None = None

    def collect(self) -> Iterator:
        gpu, host, jobs = self._latest()
        analysis = analyse(jobs, gpu, self._previous, host=host)
        self._previous = analysis
        families = [
            *self._gpu_families(gpu),
            *self._host_families(host),
            *self._rank_families(analysis, gpu, host),
            *self._source_families(),
        ]
        if self.after_collect is not None:
            self.after_collect()
        yield from families

    def _source_families(self) -> list:
        if self._failing is None:
            return []
        failing = _gauge(
            "xfertop_source_failing",
            "1 while this source's samples fail: the series it feeds are withheld until one succeeds",
            ["host", "source"],
        )
        for name, failed in self._failing().items():
            failing.add_metric([self._host_label, name], 1.0 if failed else 0.0)
        return [failing]

    # -- GPUs -----------------------------------------------------------------------------------------
    def _gpu_families(self, state: GpuState | None) -> list:
        gpus = [gpu for gpu in (state.gpus if state else ()) if gpu.lost_reason is None]
        gauges = _gpu_gauge_families()
        rx = CounterMetricFamily(
            "xfertop_gpu_pcie_rx_bytes",
            "PCIe bytes host to device (RX), full "
            "coverage (byte counters or GPM), protocol overhead included",
            labels=GPU_LABELS,
            unit="bytes",
        )
        tx = CounterMetricFamily(
            "xfertop_gpu_pcie_tx_bytes",
            "PCIe bytes device to host (TX), full "
            "coverage (byte counters or GPM), protocol overhead included",
            labels=GPU_LABELS,
            unit="bytes",
        )
        replay = CounterMetricFamily(
            "xfertop_gpu_pcie_replay_errors",
            "PCIe replays (NVML replay counter) while an exporter watched the GPU",
            labels=GPU_LABELS,
        )
        correctable = CounterMetricFamily(
            "xfertop_gpu_pcie_correctable_errors",
            "PCIe correctable errors while an exporter watched the GPU",
            labels=GPU_LABELS,
        )
        throttle = StateSetMetricFamily(
            "xfertop_gpu_throttle_reason", "Active clock throttle reasons", labels=GPU_LABELS
        )
        info = InfoMetricFamily(
            "xfertop_gpu", "The GPU's bus id and how its PCIe throughput is measured", labels=GPU_LABELS
        )
        for gpu in gpus:
            labels = [self._host_label, str(gpu.index), gpu.uuid, gpu.name]
            self._gpu_gauges(gauges, labels, gpu)
            pcie = self._totals.pcie.get(gpu.uuid)
            if pcie is not None and gpu.pcie.method in ("counter", "gpm"):
                rx.add_metric(labels, pcie.rx_bytes, created=pcie.counting_since_unix_s)
                tx.add_metric(labels, pcie.tx_bytes, created=pcie.counting_since_unix_s)
            if pcie is not None and gpu.errors.replay_delta is not None:
                replay.add_metric(labels, pcie.replay_errors, created=pcie.counting_since_unix_s)
            if pcie is not None and gpu.errors.correctable_delta is not None:
                correctable.add_metric(labels, pcie.correctable_errors, created=pcie.counting_since_unix_s)
            active = set(gpu.throttle_reasons)
            states = {reason: reason in active for reason in (*THROTTLE_REASONS, *sorted(active))}
            throttle.add_metric(labels, states)
            info.add_metric(labels, {"bus_id": gpu.bus_id, "pcie_method": gpu.pcie.method})
        return [*gauges.values(), rx, tx, replay, correctable, throttle, info]

    @staticmethod
    def _gpu_gauges(gauges: dict[str, GaugeMetricFamily], labels: list[str], gpu: GpuSnapshot) -> None:
        link = gpu.link
        values: dict[str, float | None] = {
            "util": None if gpu.util_gpu_percent is None else gpu.util_gpu_percent / 100,
            "mem_util": None if gpu.util_mem_percent is None else gpu.util_mem_percent / 100,
            "mem_used": gpu.mem_used_bytes,
            "mem_total": gpu.mem_total_bytes,
            "gen": link.gen_current,
            "gen_max": link.gen_max,
            "width": link.width_current,
            "width_max": link.width_max,
            "capacity": link_bytes_per_s(link.gen_current, link.width_current),
            "capacity_max": link_bytes_per_s(link.gen_max, link.width_max),
            "power": gpu.power_w,
            "power_limit": gpu.power_limit_w,
            "temperature": gpu.temperature_c,
            "sm_clock": None if gpu.sm_clock_mhz is None else gpu.sm_clock_mhz * 1e6,
            "mem_clock": None if gpu.mem_clock_mhz is None else gpu.mem_clock_mhz * 1e6,
        }
        for key, value in values.items():
            if value is not None:
                gauges[key].add_metric(labels, value)

    # -- host -------------------------------------------------------------------------------------------
    def _host_families(self, host: HostState | None) -> list:
        if host is None or host.error is not None:
            return []
        labels = ["host"]
        value = [self._host_label]
        cpu = _gauge(
            "xfertop_host_cpu_utilization_ratio",
            "Host CPU utilisation over all cores, 0 to 1",
            labels,
            "ratio",
        )
        cpu.add_metric(value, host.cpu_percent / 100)
        cores = _gauge("xfertop_host_cpu_cores", "CPU cores the host has", labels)
        cores.add_metric(value, len(host.cpu_per_core_percent))
        load = _gauge("xfertop_host_load1", "1-minute load average", labels)
        load.add_metric(value, host.load_avg[0])
        families = [cpu, cores, load]
        for name, help_text, figure in (
            ("xfertop_host_memory_total_bytes", "Host memory in total", host.mem_total_bytes),
            ("xfertop_host_memory_used_bytes", "Host memory used", host.mem_used_bytes),
            ("xfertop_host_memory_available_bytes", "Host memory available", host.mem_available_bytes),
            ("xfertop_host_swap_total_bytes", "Swap in total", host.swap_total_bytes),
            ("xfertop_host_swap_used_bytes", "Swap used", host.swap_used_bytes),
        ):
            family = _gauge(name, help_text, labels, "bytes")
            family.add_metric(value, figure)
            families.append(family)
        return families

    # -- ranks and jobs -----------------------------------------------------------------------------------
    def _rank_families(self, analysis: Analysis, gpu: GpuState | None, host: HostState | None) -> list:
        families = _RankFamilies.new()
        processes = {process.pid: process for process in (host.processes if host else ())}
        gpus = gpu.gpus if gpu else ()
        for job in analysis.jobs:
            exported = 0
            for analysed in job.ranks:
                rank = analysed.rank
                totals = self._totals.rank_totals(rank.ring_path)
                if totals is None or not _device_settled(rank):
                    continue  # no ring identity yet, or too early to know its GPU (the gpu_uuid label)
                if totals.gpu_uuid is None:
                    found = rank_gpu(rank, gpus)
                    totals.gpu_uuid = found.uuid if found is not None else ""
                labels = self._rank_labels(job.job.name, rank, totals)
                exported += 1
                families.add_rank(labels, analysed, totals)
                self._process_cpu(processes.get(rank.pid), labels, families.process_cpu, families.workers_cpu)
            if exported:
                families.job_verdict.add_metric(
                    [self._host_label, job.job.name, job.job.job_key],
                    {state: state == job.verdict.kind for state in VERDICT_KINDS},
                )
        return families.all()

    def _rank_labels(self, job_name: str, rank: RankState, totals: RankTotals) -> list[str]:
        return [
            self._host_label,
            job_name,
            rank.job_key,
            _label(rank.rank),
            _label(rank.local_rank),
            str(rank.pid),
            totals.gpu_uuid or "",
        ]

    @staticmethod
    def _process_cpu(
        process: ProcessStats | None, labels: list[str], own: GaugeMetricFamily, children: GaugeMetricFamily
    ) -> None:
        if process is None or process.cpu_percent is None:
            return
        own.add_metric(labels, process.cpu_percent / 100)
        child_percents = [child.cpu_percent for child in process.children if child.cpu_percent is not None]
        children.add_metric(labels, sum(child_percents) / 100)


def _cumulative_buckets(totals: RankTotals) -> list[tuple[str, float]]:
    bounds = [*(floatToGoString(bound) for bound in DATA_WAIT_BUCKETS_S), "+Inf"]
    return list(zip(bounds, itertools.accumulate(totals.data_wait_bucket_steps), strict=True))


def end_labels(end: RankEnd) -> dict[str, str]:
    """``xfertop_rank_end``'s labels: the signal by name ("SIGKILL"), a number where it has none."""
    signal_name = ""
    if end.signal is not None:
        try:
            signal_name = signal.Signals(end.signal).name
        except ValueError:
            signal_name = str(end.signal)
    return {
        "closed_ring": "true" if end.closed_ring else "false",
        "exit_code": _label(end.exit_code),
        "signal": signal_name,
    }


def _device_settled(rank: RankState) -> bool:
    """The reporter names the device at the first copy; a rank that took a few steps without one
    copies nothing (a CPU job)."""
    return bool(rank.device) or _steps_taken(rank) >= DEVICE_SETTLED_STEPS


@dataclass
class _RankFamilies:
    """The per-rank (and per-job verdict) metric families of one scrape."""

    counters: dict[str, CounterMetricFamily]
    pinned: GaugeMetricFamily
    workers: GaugeMetricFamily
    data_wait: HistogramMetricFamily
    copy_timing: GaugeMetricFamily
    loader_off_thread: GaugeMetricFamily
    cpu_optimizer: GaugeMetricFamily
    busy_thread: GaugeMetricFamily
    loop_blocked: GaugeMetricFamily
    heartbeat: GaugeMetricFamily
    process_cpu: GaugeMetricFamily
    workers_cpu: GaugeMetricFamily
    status: StateSetMetricFamily
    debug_switches: StateSetMetricFamily
    verdict: StateSetMetricFamily
    info: InfoMetricFamily
    end: InfoMetricFamily
    job_verdict: StateSetMetricFamily

    @classmethod
    def new(cls) -> _RankFamilies:
        counters = {
            field: CounterMetricFamily(name, help_text, labels=RANK_LABELS, unit=_unit_of(name))
            for name, help_text, field in RANK_COUNTERS
        }
        pinned = _gauge(
            "xfertop_rank_pinned_host_bytes",
            "Pinned host memory the rank's torch holds (torch.cuda.host_memory_stats)",
            RANK_LABELS,
            "bytes",
        )
        workers = _gauge("xfertop_rank_dataloader_workers", "DataLoader worker processes", RANK_LABELS)
        data_wait = HistogramMetricFamily(
            "xfertop_rank_step_data_wait_seconds",
            "Steps by their time blocked in next(loader) (CPU clock): how the wait spreads over the steps",
            labels=RANK_LABELS,
            unit="seconds",
        )
        copy_timing = _gauge(
            "xfertop_rank_copy_timing",
            "1 when `xfertop run` times every Tensor.to/.cuda of the rank (a step that shows no copy "
            "copied nothing), else 0",
            RANK_LABELS,
        )
        # Facts of the rank's state word the verdict reads beside the steps (remote and local alike).
        loader_off_thread = _gauge(
            "xfertop_rank_loader_off_thread",
            "1 when the rank's DataLoader is read on a thread of the job's own (a prefetcher), so the step "
            "clock's data waits are that thread's, not the training loop's; else 0",
            RANK_LABELS,
        )
        cpu_optimizer = _gauge(
            "xfertop_rank_cpu_optimizer",
            "1 when the rank's optimizers step parameters held mostly in host memory (their step is host "
            "arithmetic the GPU waits for), else 0",
            RANK_LABELS,
        )
        busy_thread = _gauge(
            "xfertop_rank_busy_thread_cpu_cores",
            "The busiest Python thread of the job's own beside the training loop (label thread), where it "
            "used 0.3 of a core or more over the reporter's last second: its CPU in cores (one GIL)",
            [*RANK_LABELS, "thread"],
        )
        loop_blocked = _gauge(
            "xfertop_rank_loop_blocked_ratio",
            "The share of the loop's own work (label part: before_model, after_step) in which its thread was "
            "blocked, neither on a CPU nor waiting for one (a queue's get(), a sleep, a read), over recent "
            "sampled steps (`xfertop run`)",
            [*RANK_LABELS, "part"],
        )
        heartbeat = _gauge(
            "xfertop_rank_heartbeat_age_seconds",
            "Seconds since the reporter last wrote",
            RANK_LABELS,
            "seconds",
        )
        process_cpu = _gauge(
            "xfertop_rank_process_cpu_cores",
            "CPU of the rank's own process, in cores (1.5: one and a half cores busy)",
            RANK_LABELS,
        )
        workers_cpu = _gauge(
            "xfertop_rank_workers_cpu_cores",
            "CPU of the rank's child processes (DataLoader workers), in cores",
            RANK_LABELS,
        )
        status = StateSetMetricFamily(
            "xfertop_rank_status", "live, stalled (heartbeat quiet) or finished", labels=RANK_LABELS
        )
        debug_switches = StateSetMetricFamily(
            "xfertop_rank_debug_switches",
            "Debugging switches the rank's process runs with, each a slowdown of every step (autograd "
            "anomaly detection, a torch profiler, a Python tracer, CUDA_LAUNCH_BLOCKING=1, "
            "PYTORCH_NO_CUDA_MEMORY_CACHING=1)",
            labels=RANK_LABELS,
        )
        verdict = StateSetMetricFamily(
            "xfertop_rank_verdict", "The rank's verdict on its recent steps", labels=RANK_LABELS
        )
        info = InfoMetricFamily("xfertop_rank", "The rank's device and world size", labels=RANK_LABELS)
        end = InfoMetricFamily(
            "xfertop_rank_end",
            "How a finished rank's process ended: closed_ring (the reporter closed its ring at exit), "
            "exit_code or signal of the command `xfertop run` started (empty when unknown)",
            labels=RANK_LABELS,
        )
        job_verdict = StateSetMetricFamily(
            "xfertop_job_verdict",
            "The verdict on this node's ranks of the job (frozen at the last live window once it ended)",
            labels=JOB_LABELS,
        )
        return cls(
            counters,
            pinned,
            workers,
            data_wait,
            copy_timing,
            loader_off_thread,
            cpu_optimizer,
            busy_thread,
            loop_blocked,
            heartbeat,
            process_cpu,
            workers_cpu,
            status,
            debug_switches,
            verdict,
            info,
            end,
            job_verdict,
        )

    def add_rank(self, labels: list[str], analysed: RankAnalysis, totals: RankTotals) -> None:
        rank = analysed.rank
        for field, family in self.counters.items():
            family.add_metric(labels, getattr(totals, field), created=totals.counting_since_unix_s)
        if rank.pinned_host_bytes is not None:
            self.pinned.add_metric(labels, rank.pinned_host_bytes)
        if rank.dataloader_workers is not None:
            self.workers.add_metric(labels, rank.dataloader_workers)
        self.data_wait.add_metric(labels, _cumulative_buckets(totals), totals.data_wait_seconds)
        self.copy_timing.add_metric(labels, 1.0 if rank.copy_timing else 0.0)
        self.loader_off_thread.add_metric(labels, 1.0 if rank.loader_off_thread else 0.0)
        self.cpu_optimizer.add_metric(labels, 1.0 if rank.cpu_optimizer else 0.0)
        if rank.busy_thread:
            self.busy_thread.add_metric([*labels, rank.busy_thread], rank.busy_thread_share)
        for part, share in (
            ("before_model", rank.loop_pre_blocked_share),
            ("after_step", rank.loop_post_blocked_share),
        ):
            if share is not None:
                self.loop_blocked.add_metric([*labels, part], share)
        self.heartbeat.add_metric(labels, rank.heartbeat_age_s)
        self.status.add_metric(labels, {state: state == rank.status for state in RANK_STATUSES})
        switches = rank.debug_switches
        self.debug_switches.add_metric(labels, {name: name in switches for name in DEBUG_SWITCHES.values()})
        kind = analysed.verdict.kind
        self.verdict.add_metric(labels, {state: state == kind for state in VERDICT_KINDS})
        self.info.add_metric(labels, {"device": rank.device, "world_size": _label(rank.world_size)})
        if rank.end is not None:
            self.end.add_metric(labels, end_labels(rank.end))

    def all(self) -> list:
        return [
            *self.counters.values(),
            self.data_wait,
            self.pinned,
            self.workers,
            self.copy_timing,
            self.loader_off_thread,
            self.cpu_optimizer,
            self.busy_thread,
            self.loop_blocked,
            self.heartbeat,
            self.process_cpu,
            self.workers_cpu,
            self.status,
            self.debug_switches,
            self.verdict,
            self.info,
            self.end,
            self.job_verdict,
        ]


def _gpu_gauge_families() -> dict[str, GaugeMetricFamily]:
    """One scrape's gauges per GPU, by the figure each carries."""
    return {
        "util": _gauge(
            "xfertop_gpu_utilization_ratio", "GPU utilisation (NVML), 0 to 1", GPU_LABELS, "ratio"
        ),
        "mem_util": _gauge(
            "xfertop_gpu_memory_utilization_ratio",
            "Memory controller utilisation (NVML), 0 to 1",
            GPU_LABELS,
            "ratio",
        ),
        "mem_used": _gauge("xfertop_gpu_memory_used_bytes", "GPU memory used", GPU_LABELS, "bytes"),
        "mem_total": _gauge("xfertop_gpu_memory_total_bytes", "GPU memory in total", GPU_LABELS, "bytes"),
        "gen": _gauge("xfertop_gpu_pcie_link_generation", "PCIe link generation now", GPU_LABELS),
        "gen_max": _gauge(
            "xfertop_gpu_pcie_link_generation_max",
            "Highest PCIe generation of the GPU and its slot",
            GPU_LABELS,
        ),
        "width": _gauge("xfertop_gpu_pcie_link_width", "PCIe link width (lanes) now", GPU_LABELS),
        "width_max": _gauge(
            "xfertop_gpu_pcie_link_width_max", "Widest PCIe link of the GPU and its slot", GPU_LABELS
        ),
        "capacity": _gauge(
            "xfertop_gpu_pcie_link_capacity_bytes_per_second",
            "What the PCIe link carries per direction at its generation and width now",
            GPU_LABELS,
        ),
        "capacity_max": _gauge(
            "xfertop_gpu_pcie_link_max_capacity_bytes_per_second",
            "What the PCIe link carries per direction at its best",
            GPU_LABELS,
        ),
        "power": _gauge("xfertop_gpu_power_watts", "Power draw", GPU_LABELS, "watts"),
        "power_limit": _gauge("xfertop_gpu_power_limit_watts", "Enforced power limit", GPU_LABELS, "watts"),
        "temperature": _gauge("xfertop_gpu_temperature_celsius", "GPU temperature", GPU_LABELS, "celsius"),
        "sm_clock": _gauge("xfertop_gpu_sm_clock_hertz", "SM clock", GPU_LABELS, "hertz"),
        "mem_clock": _gauge("xfertop_gpu_memory_clock_hertz", "Memory clock", GPU_LABELS, "hertz"),
    }


def _steps_taken(rank: RankState) -> int:
    return rank.steps[-1].step + 1 if rank.steps else 0
