"""Which GPU a rank computes on: its pid in a GPU's process list first, its CUDA device index second."""

from __future__ import annotations

import dataclasses

from ui.sample_states import gpu, gpu_state, jobs_state, rank
from xfertop.analysis.evidence import rank_context
from xfertop.model.gpu import GpuProcess, GpuSnapshot
from xfertop.model.rank_gpu import cuda_index, rank_gpu, watched_processes


def _with_processes(snapshot: GpuSnapshot, *pids: int) -> GpuSnapshot:
    return dataclasses.replace(snapshot, processes=tuple(GpuProcess(pid, 10**9) for pid in pids))


def test_cuda_index_reads_only_an_explicit_ordinal() -> None:
    assert [cuda_index(d) for d in ("cuda:3", "cuda", "cpu", "mps:0")] == [3, None, None, None]


def test_the_process_list_wins_over_the_device_index() -> None:
    # CUDA_VISIBLE_DEVICES=1: the rank says cuda:0 but NVML sees it on GPU 1.
    worker = dataclasses.replace(rank(), pid=500, device="cuda:0")
    gpus = (gpu(0), _with_processes(gpu(1), 500))
    assert rank_gpu(worker, gpus) is gpus[1]


def test_the_device_index_names_the_gpu_when_nvml_lists_no_process() -> None:
    worker = dataclasses.replace(rank(), pid=500, device="cuda:1")
    assert rank_gpu(worker, (gpu(0), gpu(1))).index == 1
    assert rank_gpu(dataclasses.replace(worker, device="cpu"), (gpu(0), gpu(1))) is None


def test_a_pid_on_several_gpus_takes_its_device_and_a_lost_gpu_gives_none() -> None:
    worker = dataclasses.replace(rank(), pid=500, device="cuda:1")
    both = (_with_processes(gpu(0), 500), _with_processes(gpu(1), 500))
    assert rank_gpu(worker, both) is both[1]
    lost = dataclasses.replace(gpu(1), lost_reason="GPU is lost")
    assert rank_gpu(worker, (gpu(0), lost)) is None


def _busy(rank_state, gpus) -> float | None:
    return rank_context(rank_state, None, gpus, None).gpu_busy_share


def test_busy_share_is_the_ranks_gpu_utilisation_as_a_fraction() -> None:
    ranks = [
        dataclasses.replace(rank(rank_index=i, world=2), pid=500 + i, device=f"cuda:{i}") for i in (0, 1)
    ]
    gpus = (_with_processes(gpu(0, util=40.0), 500), _with_processes(gpu(1, util=None), 501))
    state = dataclasses.replace(gpu_state(2), gpus=gpus)  # type: ignore[arg-type]
    assert [_busy(r, state) for r in ranks] == [0.4, None]
    assert _busy(ranks[0], None) is None


def test_busy_share_only_where_a_live_rank_is_its_gpus_only_user() -> None:
    # NVML utilisation is the GPU's: another process on it, an ended rank, or a process list NVML cannot
    # show (who uses the GPU is unknown) and it says nothing of this rank.
    live = dataclasses.replace(rank(), pid=500, device="cuda:0")
    ended = dataclasses.replace(live, status="finished")
    alone = dataclasses.replace(gpu_state(1), gpus=(_with_processes(gpu(0, util=97.0), 500),))
    shared = dataclasses.replace(gpu_state(1), gpus=(_with_processes(gpu(0, util=97.0), 500, 900),))
    unknown = dataclasses.replace(gpu_state(1), gpus=(gpu(0, util=97.0),))
    assert _busy(live, alone) == 0.97
    assert _busy(live, shared) is None
    assert _busy(live, unknown) is None
    assert _busy(ended, alone) is None


def test_watched_processes_are_the_ranks_with_their_gpus_then_other_gpu_processes() -> None:
    worker = dataclasses.replace(rank(rank_index=3, world=4), pid=500, device="cuda:1")
    finished = dataclasses.replace(rank(status="finished"), pid=501)
    state = dataclasses.replace(gpu_state(2), gpus=(_with_processes(gpu(0), 700, 500), gpu(1)))
    watched = watched_processes(state, jobs_state(worker, finished))
    assert [(w.pid, w.gpu_bus_id, w.rank) for w in watched] == [
        (500, "00000000:00:00.0", 3),
        (700, "00000000:00:00.0", None),
    ]
