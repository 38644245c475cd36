"""Host snapshots published by sources.host."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProcessStats:
    """One process of interest (a GPU process or a training job) and its children (DataLoader workers)."""

    pid: int
    name: str
    user: str | None
    #: Percent of one core over the last interval (can exceed 100); None on the first sample.
    cpu_percent: float | None
    rss_bytes: int | None
    num_threads: int | None
    #: Host memory pinned for this process as the kernel reports it per process. The host source leaves
    #: it None: measured on an H200 (driver 580), 1 GiB of CUDA pinned memory raised none of VmLck, VmPin
    #: or smaps Locked, only RssShmem, which also counts /dev/shm tensors (docs/host-memory.md). The
    #: reporter's torch.cuda.host_memory_stats() is the figure to show; cuda_host_alloc_bytes below is the
    #: per-process figure that /proc does give (cudaHostAlloc only).
    pinned_bytes: int | None
    children: tuple[ProcessStats, ...] = ()
    #: Why some figures are missing ("access denied: another user's process").
    error: str | None = None
    #: VmLck of /proc/<pid>/status: pages in mlock()ed mappings (not CUDA pinned memory).
    locked_bytes: int | None = None
    #: VmPin of /proc/<pid>/status: pages long-term pinned by drivers that account them (RDMA, io_uring);
    #: CUDA does not account its pinned memory here.
    pinned_vm_bytes: int | None = None
    #: RssShmem of /proc/<pid>/status: resident shared memory. CUDA pinned host buffers land here (+1 GiB
    #: for 1 GiB pinned, measured), and so do DataLoader tensors shared through /dev/shm.
    shmem_rss_bytes: int | None = None
    ppid: int | None = None
    #: CUDA pinned host memory allocated by cudaHostAlloc (torch's default pinned allocator), read from
    #: /proc: the summed Rss of the process's "/dev/zero (deleted)" mappings in /proc/<pid>/smaps, only
    #: for a process that maps /dev/nvidiactl (a CUDA process), else None. Measured on an H200 (driver
    #: 580): 10 MiB (the driver's own) after CUDA init, 1034 MiB after 1 GiB pin_memory(), still 1034 MiB
    #: while torch's caching host allocator keeps the freed block. Blind to cudaHostRegister'ed memory
    #: (pinned_use_cuda_host_register: plain anonymous memory) and includes any other MAP_SHARED anonymous
    #: memory of the process. Watched processes only, not their workers; smaps is costly, so it is read
    #: at most every few seconds per process (docs/host-memory.md): see cuda_host_alloc_age_s.
    cuda_host_alloc_bytes: int | None = None
    #: Seconds between the read of cuda_host_alloc_bytes and this sample; None when that figure is None.
    cuda_host_alloc_age_s: float | None = None
    #: CPUs the scheduler may run it on (Cpus_allowed_list of /proc/<pid>/status: its affinity, within
    #: its cpuset); None where status could not be read.
    cpus_allowed: tuple[int, ...] | None = None
    #: The smallest CPU quota on its cgroup's path, in cores (cgroup v2 cpu.max, v1 cpu.cfs_quota_us over
    #: cpu.cfs_period_us): CPU time it may use whatever its affinity allows. None: no quota, or unknown
    #: (read for watched processes only: their DataLoader workers share their cgroup).
    cpu_quota_cores: float | None = None
    #: The file that sets that quota, on the viewer's filesystem.
    cpu_quota_file: str | None = None
    #: Share of that cgroup's periods in which it ran out of quota and waited (cpu.stat nr_throttled over
    #: nr_periods) over the last ~10 s; None without a quota or before a second reading.
    cpu_throttled_share: float | None = None
    #: That cgroup's CPU time over the same span against what its quota allowed (1.0: all of it); None
    #: without a quota, before a second reading, or where the usage is unknown (v1 without cpuacct).
    cpu_quota_used_share: float | None = None
    #: Percent of one core its main thread (the thread whose id is its pid, where a training loop runs)
    #: used over the last interval, of ``cpu_percent``'s; None on the first sample, for DataLoader
    #: workers, or where /proc/<pid>/task/<pid>/stat could not be read.
    main_thread_cpu_percent: float | None = None
    #: Percent of one core's time its main thread was ready to run but waited for a CPU (the scheduler's
    #: run delay, /proc/<pid>/schedstat) over the last interval. With ``cpu_percent`` it tells a DataLoader
    #: worker that waits on storage or a sleep (little of either) from one that wants a core it cannot get
    #: (both add up to about 100). Read for children (DataLoader workers) only; None on the first sample,
    #: or where schedstat is not there.
    run_delay_percent: float | None = None


@dataclass(frozen=True)
class HostState:
    timestamp: float
    hostname: str
    cpu_percent: float
    cpu_per_core_percent: tuple[float, ...]
    load_avg: tuple[float, float, float]
    mem_total_bytes: int
    mem_used_bytes: int
    mem_available_bytes: int
    swap_total_bytes: int
    swap_used_bytes: int
    processes: tuple[ProcessStats, ...] = ()
    error: str | None = None
