"""What a benchmark on a GPU would compete with: asked before `b` or `a` starts one."""

from __future__ import annotations

from xfertop.ui.view_state import ViewState


def competing_job(view: ViewState, gpu_index: int) -> str | None:
    """A live training job on a GPU, else any process on ``gpu_index``, in words; None when the GPU is free.

    A job's device says "cuda" or "cuda:N" and its local rank may be remapped by CUDA_VISIBLE_DEVICES, so
    any live CUDA job counts: a wrong "busy" costs one question, a wrong "free" skews a benchmark.
    """
    for job in view.jobs.jobs if view.jobs else ():
        if any(rank.status == "live" and rank.device.startswith("cuda") for rank in job.ranks):
            return job.name
    for gpu in view.gpu.gpus if view.gpu else ():
        if gpu.index == gpu_index and gpu.processes:
            process = gpu.processes[0]
            return f"pid {process.pid} {process.command or ''}".strip()
    return None
