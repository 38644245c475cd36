"""Fixed snapshots shaped like an H200 box with a starved training job: the input of snapshot tests."""

from __future__ import annotations

import dataclasses

from xfertop.model.gpu import (
    GpuProcess,
    GpuSnapshot,
    GpuState,
    PcieErrors,
    PcieLink,
    PcieThroughput,
)
from xfertop.model.host import HostState, ProcessStats
from xfertop.model.jobs import JobsState, JobState, RankState, StepRecord

FROZEN_TIME = 1_796_000_000.0  # a fixed instant so the header clock never moves in snapshots
GIB = 1024**3
TRAIN_PID = 4242


def gpu(
    index: int,
    *,
    rx: float = 54.9e9,
    tx: float = 5.0e9,
    gen: int = 5,
    # NVML's busy share, as the sample rank's measured idle leaves it (38 ms gap + 9 ms copy of ~103 ms).
    util: float = 54.0,
    method: str = "counter",
    lost_reason: str | None = None,
) -> GpuSnapshot:
    return GpuSnapshot(
        index=index,
        name="NVIDIA H200",
        uuid=f"GPU-0000000{index}-h200",
        bus_id=f"00000000:{index:02x}:00.0",
        util_gpu_percent=util,
        util_mem_percent=31.0,
        mem_used_bytes=41 * 10**9,
        mem_total_bytes=143_771_000_000,
        pcie=PcieThroughput(
            rx_bytes_per_s=rx,
            tx_bytes_per_s=tx,
            method=method,  # type: ignore[arg-type]
            coverage=1.0 if method == "counter" else 0.02,
        ),
        link=PcieLink(gen_current=gen, width_current=16, gen_max=5, width_max=16, gen_gpu_max=5),
        errors=PcieErrors(replay_delta=0, correctable_delta=0),
        sm_clock_mhz=1980,
        mem_clock_mhz=3201,
        power_w=310.0,
        power_limit_w=700.0,
        temperature_c=52.0,
        throttle_reasons=(),
        processes=(
            GpuProcess(
                pid=TRAIN_PID, gpu_memory_bytes=40 * 10**9, user="alice", command="python train.py --epochs 3"
            ),
        )
        if index == 0
        else (),
        lost_reason=lost_reason,
    )


def gpu_state(count: int = 1, **kwargs: object) -> GpuState:
    return GpuState(
        timestamp=FROZEN_TIME,
        gpus=tuple(gpu(i, **kwargs) for i in range(count)),  # type: ignore[arg-type]
        driver_version="580.159.04",
        cuda_driver_version="13.0",
    )


def no_driver_state() -> GpuState:
    return GpuState(
        timestamp=FROZEN_TIME,
        gpus=(),
        error="no NVIDIA driver found (libnvidia-ml.so.1): showing host metrics only",
    )


def host_state(cores: int = 16) -> HostState:
    worker = ProcessStats(
        pid=TRAIN_PID + 1,
        name="pt_data_worker",
        user="alice",
        cpu_percent=98.0,
        rss_bytes=2 * GIB,
        num_threads=4,
        pinned_bytes=None,
    )
    trainer = ProcessStats(
        pid=TRAIN_PID,
        name="python",
        user="alice",
        cpu_percent=104.0,
        rss_bytes=6 * GIB,
        num_threads=40,
        pinned_bytes=None,
        children=(worker,),
    )
    return HostState(
        timestamp=FROZEN_TIME,
        hostname="h200-box",
        cpu_percent=37.5,
        cpu_per_core_percent=tuple(float((i * 37) % 100) for i in range(cores)),
        load_avg=(3.1, 2.8, 2.5),
        mem_total_bytes=128 * GIB,
        mem_used_bytes=41 * GIB,
        mem_available_bytes=87 * GIB,
        swap_total_bytes=0,
        swap_used_bytes=0,
        processes=(trainer,),
    )


def steps(count: int = 60, wait_ms: float = 41.0) -> tuple[StepRecord, ...]:
    """A starved rank: 100 ms steps of which ``wait_ms`` wait for data, pageable non_blocking copies; the
    GPU idles 38 ms of each step's wait (its measured gap), and through its copy call (the stream had
    drained). Under xfertop.watch: the loop's own work and syncs are not told apart from the model."""
    return tuple(
        StepRecord(
            step=i,
            wall_ms=100.0 + (i % 7),
            data_wait_ms=wait_ms + (i % 5),
            copy_cpu_ms=9.0,
            loop_pre_ms=0.0,
            sync_ms=0.0,
            loop_post_ms=0.0,
            gpu_gap_ms=38.0,
            h2d_bytes=64 * 1024**2,
            samples=256,
            pinned=False,
            pageable_non_blocking=True,
        )
        for i in range(count)
    )


def step_history(seconds: int = 180, starved_s: int = 30) -> tuple[StepRecord, ...]:
    """``seconds`` of the sample rank's steps before ``steps()`` (numbered up to -1), starved and fed in
    turn every ``starved_s`` seconds: what the step strip has gathered when a snapshot is taken."""
    count = seconds * 10  # 100 ms steps
    per_phase = starved_s * 10
    return tuple(
        dataclasses.replace(step, step=i - count, data_wait_ms=60.0 if (i // per_phase) % 2 == 0 else 2.0)
        for i, step in enumerate(steps(count))
    )


def with_step_history(jobs: JobsState) -> JobsState:
    """``jobs`` with each rank's steps ``step_history()``: applied to the view before the snapshots."""
    return dataclasses.replace(
        jobs,
        jobs=tuple(
            dataclasses.replace(
                job, ranks=tuple(dataclasses.replace(rank, steps=step_history()) for rank in job.ranks)
            )
            for job in jobs.jobs
        ),
    )


def rank(status: str = "live", workers: int = 1, rank_index: int = 0, world: int = 1) -> RankState:
    return RankState(
        pid=TRAIN_PID + rank_index * 100,
        host="h200-box",
        rank=rank_index,
        local_rank=rank_index,
        world_size=world,
        job_key="job-1",
        device=f"cuda:{rank_index}",
        argv=("python", "train.py", "--epochs", "3"),
        status=status,  # type: ignore[arg-type]
        heartbeat_age_s=12.0 if status == "stalled" else 0.1,
        steps=steps(),
        pinned_host_bytes=GIB,
        dataloader_workers=workers,
        reporter_errors=0,
        reporter_disabled=False,
        ring_path=f"/tmp/xfertop-1000/{TRAIN_PID}.ring",
    )


def jobs_state(*ranks: RankState) -> JobsState:
    chosen = ranks or (rank(),)
    return JobsState(
        timestamp=FROZEN_TIME,
        jobs=(JobState(job_key="job-1", name="train.py", ranks=chosen),),
        ring_dir="/tmp/xfertop-1000",
    )


def empty_jobs_state() -> JobsState:
    return JobsState(timestamp=FROZEN_TIME, jobs=(), ring_dir="/tmp/xfertop-1000")
