"""What the verdict knows about a rank beyond its own steps: the GPU it runs on (NVML utilisation and
PCIe RX, only where the rank is that GPU's only user and still steps), where its DataLoader workers may
run, how busy those cores are and how much CPU their cgroup's quota gives them, and the host's memory.
Each advice line names the evidence it uses.

Pure: snapshots in, a ``Context`` per rank out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xfertop.analysis.pcie_link import link_bytes_per_s
from xfertop.analysis.steps import WindowStats
from xfertop.analysis.thresholds import (
    CGROUP_THROTTLED_SHARE,
    CORES_SATURATED_PERCENT,
    NVML_FRESH_MIN_S,
    NVML_FRESH_STEPS,
    NVML_READING_SLACK_S,
    PINNED_RAM_WARN_SHARE,
    QUOTA_USED_UP_SHARE,
    SWAPPING_AVAILABLE_SHARE,
)
from xfertop.model.gpu import GpuSnapshot, GpuState
from xfertop.model.host import HostState, ProcessStats
from xfertop.model.jobs import RankState
from xfertop.model.rank_gpu import rank_gpu


def _throttled_often(share: float | None) -> bool:
    return share is not None and share >= CGROUP_THROTTLED_SHARE


def _used_up(used: float | None) -> bool:
    """Its CPU time reaches the quota on average, or is not known (then throttling alone tells)."""
    return used is None or used >= QUOTA_USED_UP_SHARE


def _throttled(share: float | None, used: float | None) -> bool:
    """The cgroup uses its quota up: throttled in many periods, and (where known) its CPU time reaches
    the quota on average."""
    return _throttled_often(share) and _used_up(used)


def _throttled_in_bursts(share: float | None, used: float | None) -> bool:
    """Throttled in many periods while its CPU time stays well below the quota on average."""
    return _throttled_often(share) and not _used_up(used)


@dataclass(frozen=True)
class CgroupCpuEvidence:
    """The CPU quota of the rank's cgroup (the host source's reading of its process), with or without
    DataLoader workers: a rank with num_workers=0 can use its quota up on its own."""

    #: The smallest quota on its cgroup path, in cores.
    quota_cores: float
    #: The file that sets it (cpu.max: cgroup v2; cpu.cfs_quota_us: v1).
    quota_file: str | None
    #: Share of its recent periods in which the cgroup ran out of quota; None if unknown.
    throttled_share: float | None
    #: Its CPU time over those periods against what the quota allowed (1.0: all); None if unknown.
    used_share: float | None = None

    @property
    def throttled(self) -> bool:
        """It uses all of its quota (see _throttled)."""
        return _throttled(self.throttled_share, self.used_share)


@dataclass(frozen=True)
class WorkersEvidence:
    """The rank's DataLoader workers as the host source sees them (children of the rank's process)."""

    #: Worker processes found (children of the rank).
    count: int
    #: The cores they may run on (the union of their affinities), sorted.
    allowed_cpus: tuple[int, ...]
    #: Their CPU use, percent of one core, summed; None before the second host sample.
    cpu_percent: float | None
    #: How busy the allowed cores are (anyone's work), percent averaged over them; None if unknown.
    allowed_cores_busy_percent: float | None
    #: The CPU quota of the rank's cgroup in cores (its workers share that cgroup): the smallest on its
    #: path (cgroup v2 cpu.max, v1 cpu.cfs_quota_us); None: no quota, or unknown.
    cpu_quota_cores: float | None = None
    #: The file that sets that quota.
    cpu_quota_file: str | None = None
    #: Share of that cgroup's recent periods in which it ran out of quota (cpu.stat); None if unknown.
    cpu_throttled_share: float | None = None
    #: That cgroup's CPU time over those periods against what the quota allowed; None if unknown.
    cpu_quota_used_share: float | None = None
    #: The cores of the machine (online), None if unknown: workers allowed all of them are not confined.
    host_cores: int | None = None
    #: Their training process may run on some of their cores (its affinity overlaps theirs, or is not
    #: known): it competes with them for those cores.
    trainer_shares_cores: bool = True
    #: CPU of the training process's main thread, percent of one core (ProcessStats); None if unknown.
    main_thread_cpu_percent: float | None = None
    #: Their time ready to run but waiting for a CPU, percent of one core, summed (ProcessStats.
    #: run_delay_percent); None where unknown for any of them.
    run_delay_percent: float | None = None

    def competing(self, count: int) -> int:
        """Processes that want the workers' cores: the ``count`` workers, and their training process
        where it runs there too."""
        return count + (1 if self.trainer_shares_cores else 0)

    @property
    def confined(self) -> bool:
        """Their affinity leaves out some of the machine's cores (unknown: taken as confined)."""
        return self.host_cores is None or len(self.allowed_cpus) < self.host_cores

    @property
    def effective_cores(self) -> float:
        """The cores' worth of CPU the workers can get: their allowed cores, or the quota where lower."""
        cores = float(len(self.allowed_cpus))
        return cores if self.cpu_quota_cores is None else min(cores, self.cpu_quota_cores)

    @property
    def quota_below_cores(self) -> bool:
        """The quota gives less CPU than the allowed cores: it is what bounds the workers."""
        return self.cpu_quota_cores is not None and self.cpu_quota_cores < len(self.allowed_cpus)

    @property
    def throttled(self) -> bool:
        """The cgroup ran out of its quota in a large share of periods and (where known) used it up on
        average: it uses all the CPU it may."""
        return _throttled(self.cpu_throttled_share, self.cpu_quota_used_share)

    @property
    def throttled_in_bursts(self) -> bool:
        """Throttled in many periods, with CPU to spare on average: more workers may still help."""
        return _throttled_in_bursts(self.cpu_throttled_share, self.cpu_quota_used_share)

    @property
    def saturated(self) -> bool:
        """The CPU the workers may use is used up: their cores are busy, or their cgroup is throttled."""
        busy = self.allowed_cores_busy_percent
        return (busy is not None and busy >= CORES_SATURATED_PERCENT) or self.throttled


@dataclass(frozen=True)
class MemoryEvidence:
    pinned_bytes: int
    mem_total_bytes: int
    mem_available_bytes: int
    swap_used_bytes: int

    @property
    def pinned_share(self) -> float:
        return self.pinned_bytes / self.mem_total_bytes if self.mem_total_bytes else 0.0

    @property
    def swapping(self) -> bool:
        return (
            self.swap_used_bytes > 0
            and self.mem_total_bytes > 0
            and self.mem_available_bytes / self.mem_total_bytes < SWAPPING_AVAILABLE_SHARE
        )

    @property
    def worth_a_warning(self) -> bool:
        return self.pinned_share >= PINNED_RAM_WARN_SHARE or (self.swapping and self.pinned_bytes > 0)


@dataclass(frozen=True)
class Context:
    #: The rank computes on a GPU (its device is cuda:N); False for a CPU job (no PCIe to tune).
    on_gpu: bool = True
    #: Copies were timed (`xfertop run`), or some step of the window made or marked one: a copy share
    #: of 0 means no copy. False: nobody looked ("copies not measured").
    copies_measured: bool = True
    #: NVML utilisation of the rank's GPU as a fraction, while the rank steps and is its only user.
    gpu_busy_share: float | None = None
    #: PCIe RX of the rank's GPU (bytes/s) and what its link carries now, on the same condition.
    gpu_rx_bytes_per_s: float | None = None
    link_bytes_per_s: float | None = None
    workers: WorkersEvidence | None = None
    memory: MemoryEvidence | None = None
    #: The CPU quota of the rank's cgroup, while it steps; None: no quota, or unknown.
    cgroup_cpu: CgroupCpuEvidence | None = None
    #: The rank steps now (its last step ended moments ago): host and GPU figures describe its work. A
    #: rank that stopped stepping (ending, stalled) has workers gone and a GPU gone quiet.
    stepping: bool = True
    #: The rank's optimizers step mostly host memory (RankState.cpu_optimizer).
    cpu_optimizer: bool = False
    #: Whether the loop reads a DataLoader cannot be told: a sampled window (attach) in which no sample was
    #: in one, as a quick loader with num_workers=0 leaves it. No workers known is then not "no DataLoader"
    #: (which the step clock knows), and no advice may say there is none.
    loader_unknown: bool = False
    #: The share of the loop's own work before the model and after the step in which its thread was
    #: blocked (RankState.loop_pre_blocked_share); None: not known.
    loop_pre_blocked_share: float | None = None
    loop_post_blocked_share: float | None = None
    #: The cores the rank's process may run on (its affinity), while it steps; None: unknown. On a CPU job
    #: its DataLoader workers would share them with the model's threads.
    cores_allowed: int | None = None

    @property
    def rx_link_share(self) -> float | None:
        if self.gpu_rx_bytes_per_s is None or not self.link_bytes_per_s:
            return None
        return self.gpu_rx_bytes_per_s / self.link_bytes_per_s


def _within_steps(seconds: float, stats: WindowStats | None, floor_s: float) -> bool:
    """``seconds`` is at most NVML_FRESH_STEPS typical steps of the window (and at least ``floor_s``)."""
    typical_s = stats.wall.p50_ms / 1000 if stats is not None else 0.0
    return seconds <= max(floor_s, NVML_FRESH_STEPS * typical_s)


def stepping_now(rank: RankState, stats: WindowStats | None) -> bool:
    """The rank runs and its last step ended recently: what the GPU does now is what this rank does."""
    return rank.status == "live" and _within_steps(rank.heartbeat_age_s, stats, NVML_FRESH_MIN_S)


def read_while_stepping(
    rank: RankState, stats: WindowStats | None, reading_at: float, rank_seen_at: float
) -> bool:
    """The GPU reading taken at ``reading_at`` (NVML averages the sample period before it) describes the
    rank's steps: its last step, ``heartbeat_age_s`` before ``rank_seen_at`` (when the jobs state was
    read, on the same clock), ended at most a few typical steps before the reading, or after it."""
    last_step_at = rank_seen_at - rank.heartbeat_age_s
    return _within_steps(reading_at - last_step_at, stats, NVML_READING_SLACK_S)


def sole_user_gpu(rank: RankState, gpu_state: GpuState | None) -> GpuSnapshot | None:
    """The rank's GPU where the rank is its only process (NVML lists exactly this pid), else None."""
    gpus = gpu_state.gpus if gpu_state is not None else ()
    gpu = rank_gpu(rank, gpus)
    if gpu is None or {proc.pid for proc in gpu.processes} != {rank.pid}:
        return None
    return gpu


def _find(processes: Sequence[ProcessStats], pid: int) -> ProcessStats | None:
    for process in processes:
        if process.pid == pid:
            return process
        found = _find(process.children, pid)
        if found is not None:
            return found
    return None


def cgroup_cpu_evidence(rank: RankState, host: HostState | None) -> CgroupCpuEvidence | None:
    process = _find(host.processes, rank.pid) if host is not None else None
    if process is None or process.cpu_quota_cores is None:
        return None
    return CgroupCpuEvidence(
        process.cpu_quota_cores,
        process.cpu_quota_file,
        process.cpu_throttled_share,
        process.cpu_quota_used_share,
    )


def _worker_processes(process: ProcessStats, num_workers: int) -> tuple[ProcessStats, ...]:
    """The rank's DataLoader workers: its children under fork; under forkserver (Python 3.14's default
    on Linux) its children are the forkserver and a resource tracker, and the workers are the
    forkserver's children. Told apart by the count the reporter gives: too few children, enough
    grandchildren."""
    children = process.children
    grandchildren = tuple(g for child in children for g in child.children)
    if len(children) < num_workers <= len(grandchildren):
        return grandchildren
    return children


def workers_evidence(rank: RankState, host: HostState | None) -> WorkersEvidence | None:
    if host is None or not rank.dataloader_workers:
        return None
    process = _find(host.processes, rank.pid)
    if process is None or not process.children:
        return None
    workers = _worker_processes(process, rank.dataloader_workers)
    allowed = sorted({cpu for w in workers for cpu in (w.cpus_allowed or ())})
    if not allowed:
        return None
    known = [w.cpu_percent for w in workers if w.cpu_percent is not None]
    delays = [w.run_delay_percent for w in workers if w.run_delay_percent is not None]
    cores = host.cpu_per_core_percent
    busy = [cores[cpu] for cpu in allowed if cpu < len(cores)]
    return WorkersEvidence(
        count=len(workers),
        allowed_cpus=tuple(allowed),
        cpu_percent=sum(known) if known else None,
        allowed_cores_busy_percent=sum(busy) / len(busy) if busy and len(busy) == len(allowed) else None,
        # DataLoader workers inherit their rank's cgroup; the host source reads it for the rank.
        cpu_quota_cores=process.cpu_quota_cores,
        cpu_quota_file=process.cpu_quota_file,
        cpu_throttled_share=process.cpu_throttled_share,
        cpu_quota_used_share=process.cpu_quota_used_share,
        host_cores=len(cores) or None,
        trainer_shares_cores=not process.cpus_allowed or bool(set(process.cpus_allowed) & set(allowed)),
        main_thread_cpu_percent=process.main_thread_cpu_percent,
        run_delay_percent=sum(delays) if delays and len(delays) == len(workers) else None,
    )


def memory_evidence(ranks: Sequence[RankState], host: HostState | None) -> MemoryEvidence | None:
    """Pinned host memory of the ranks on this host (the reporter's figure), against its RAM."""
    if host is None or not host.mem_total_bytes:
        return None
    pinned = sum(
        r.pinned_host_bytes or 0 for r in ranks if r.status != "finished" and r.host == host.hostname
    )
    return MemoryEvidence(pinned, host.mem_total_bytes, host.mem_available_bytes, host.swap_used_bytes)


def rank_context(
    rank: RankState,
    stats: WindowStats | None,
    gpu_state: GpuState | None,
    host: HostState | None,
    memory: MemoryEvidence | None = None,
    *,
    seen_at: float | None = None,
    previous: Context | None = None,
) -> Context:
    """``previous``: the rank's context in the snapshot before, whose evidence stands in for what now
    no longer describes the rank's steps while it still counts as stepping: the DataLoader workers once
    they are gone (a loop's end, or between epochs without persistent workers), and an NVML reading
    taken after its last step. ``seen_at``: when the rank's heartbeat age was read (the jobs state's
    time); with it, NVML's figures count only when read while the rank stepped
    (``read_while_stepping``); without it, the heartbeat's age alone decides."""
    # A rank whose device is not known yet (no copy, no CUDA batch) is on a GPU only if its steps are
    # GPU-timed; otherwise nothing says it has a PCIe link to tune.
    on_gpu = rank.device.startswith("cuda") or (
        not rank.device and stats is not None and stats.clock == "gpu"
    )
    copies_measured = rank.copy_timing or (stats is not None and stats.copied_step_fraction > 0)
    busy = rx = link = None
    stepping = stepping_now(rank, stats)
    if on_gpu and stepping:
        gpu = sole_user_gpu(rank, gpu_state)
        if gpu is not None and gpu_state is not None:
            if seen_at is None or read_while_stepping(rank, stats, gpu_state.timestamp, seen_at):
                busy = gpu.util_gpu_percent / 100 if gpu.util_gpu_percent is not None else None
                if not rank.world_size or rank.world_size <= 1:
                    # A rank of several may receive its peers' gradients over PCIe (NCCL P2P or
                    # through host memory without NVLink): its GPU's RX is then not its input.
                    rx = gpu.pcie.rx_bytes_per_s
                    link = link_bytes_per_s(gpu.link.gen_current, gpu.link.width_current)
            elif previous is not None and previous.stepping:
                # Read after the loop's last step seen (it may be ending, or the GPU source read
                # after the jobs source): the last reading taken while it stepped stands.
                busy = previous.gpu_busy_share
                rx, link = previous.gpu_rx_bytes_per_s, previous.link_bytes_per_s
    workers = workers_evidence(rank, host) if stepping else None
    cgroup_cpu = cgroup_cpu_evidence(rank, host) if stepping else None
    if stepping and workers is None and previous is not None and rank.dataloader_workers:
        # The workers are gone (the loop ended, or between epochs) while its steps are still judged.
        workers, cgroup_cpu = previous.workers, cgroup_cpu or previous.cgroup_cpu
    process = _find(host.processes, rank.pid) if host is not None and stepping else None
    cores = len(process.cpus_allowed) if process is not None and process.cpus_allowed else None
    if cores is None and previous is not None:
        cores = previous.cores_allowed
    return Context(
        on_gpu=on_gpu,
        copies_measured=copies_measured,
        gpu_busy_share=busy,
        gpu_rx_bytes_per_s=rx,
        link_bytes_per_s=link,
        workers=workers,
        cgroup_cpu=cgroup_cpu,
        memory=memory,
        stepping=stepping,
        cpu_optimizer=rank.cpu_optimizer,
        loop_pre_blocked_share=rank.loop_pre_blocked_share,
        loop_post_blocked_share=rank.loop_post_blocked_share,
        cores_allowed=cores,
    )
