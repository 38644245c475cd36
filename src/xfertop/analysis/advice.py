"""Concrete next steps for each verdict, as sentences a person can act on.

Sources for the advice: the PyTorch Tuning Guide and data-loading tutorial (num_workers, pin_memory,
non_blocking, persistent_workers, prefetch_factor), and GPU-FACTS.md (pinned copies ~8x faster than
pageable ones on an H200; non_blocking from pageable memory is synchronous).
"""

from __future__ import annotations

from xfertop.analysis.steps import WindowStats
from xfertop.analysis.thresholds import (
    BURSTY_P95_OVER_P50,
    PCIE_IRRELEVANT_COPY_SHARE,
    PINNED_MIN_STEP_FRACTION,
    SPIKE_MIN_WAIT_FRACTION,
)


def pct(share: float) -> str:
    """A share as a whole percentage; "<1%" rather than a misleading "0%" for small non-zero shares."""
    if 0 < share < 0.005:
        return "<1%"
    return f"{share * 100:.0f}%"


def is_bursty(stats: WindowStats) -> bool:
    """A few long waits among short ones: a deeper prefetch queue would absorb them."""
    wait = stats.data_wait
    return wait.p95_ms > 0 and wait.p95_ms >= BURSTY_P95_OVER_P50 * max(wait.p50_ms, 0.01)


def has_spikes(stats: WindowStats) -> bool:
    """Most of the wait sits in a handful of steps (the epoch-start pattern)."""
    return stats.data_wait_top_share >= SPIKE_MIN_WAIT_FRACTION


def is_pageable(stats: WindowStats) -> bool:
    return stats.pinned_step_fraction is not None and stats.pinned_step_fraction < PINNED_MIN_STEP_FRACTION


def asks_non_blocking_from_pageable(stats: WindowStats) -> bool:
    fraction = stats.pageable_non_blocking_step_fraction
    return fraction is not None and fraction > 0


def do_not_tune_pcie(stats: WindowStats) -> list[str]:
    if stats.copy_share >= PCIE_IRRELEVANT_COPY_SHARE:
        return []
    return [f"Do not tune PCIe: host-to-device copies are only {pct(stats.copy_share)} of each step."]


def _more_workers(dataloader_workers: int | None) -> str:
    if dataloader_workers is not None:
        return (f"Raise num_workers above {dataloader_workers} until samples/s stops improving; past the "
                "core count or the storage's limit more workers make it worse.")
    return ("Raise num_workers (start at 2-4 per GPU) until samples/s stops improving, and keep decoding "
            "out of the main process.")


def input_bound_advice(stats: WindowStats, dataloader_workers: int | None) -> list[str]:
    advice: list[str] = []
    spikes = has_spikes(stats)
    if spikes:
        advice.append(f"A few steps hold most of the wait (longest {stats.data_wait_max_ms:.0f} ms, median "
                      f"{stats.data_wait.p50_ms:.0f} ms): if they fall at epoch starts, set "
                      "persistent_workers=True so the workers are not restarted every epoch.")
    if dataloader_workers == 0:
        advice.append("num_workers=0: every batch is loaded and decoded inside the training loop. "
                      "Set num_workers to 2-4 per GPU and raise it until samples/s stops improving.")
        advice.append("Move decoding and augmentation off the main process: into DataLoader workers, "
                      "or onto the GPU after the copy.")
    elif not spikes:
        # Only steady waits call for more workers: between spikes the workers already keep up.
        advice.append(_more_workers(dataloader_workers))
    if is_bursty(stats) and not spikes:
        advice.append(f"Waits are bursty (p95 {stats.data_wait.p95_ms:.0f} ms vs median "
                      f"{stats.data_wait.p50_ms:.0f} ms): raise prefetch_factor (default 2) so more "
                      "batches are ready ahead.")
    if is_pageable(stats) and stats.clock == "gpu":
        advice.append("Set pin_memory=True in the DataLoader and copy with non_blocking=True, so the copy "
                      "overlaps compute instead of stalling the loop.")
    return advice + do_not_tune_pcie(stats)


def copy_bound_advice(stats: WindowStats) -> list[str]:
    advice: list[str] = []
    if asks_non_blocking_from_pageable(stats):
        advice.append("non_blocking=True is asked of pageable memory, where it silently turns synchronous: "
                      "set pin_memory=True in the DataLoader so the copy can overlap compute.")
    elif is_pageable(stats):
        advice.append("Batches are copied from pageable memory: set pin_memory=True in the DataLoader "
                      "(pinned copies ran ~8x faster than pageable ones on an H200) and non_blocking=True.")
    else:
        advice.append("Copies are already pinned: copy with non_blocking=True and do it a batch ahead "
                      "(on a side stream) so it overlaps the previous step's compute.")
    advice.append("Move fewer bytes: send uint8 images or compact dtypes and convert/normalise on the GPU.")
    return advice


def compute_bound_advice(stats: WindowStats, hidden_wait: bool) -> list[str]:
    advice = ["The input pipeline keeps up: more workers, pinning or prefetching will not speed this "
              "job up."]
    if hidden_wait:
        advice.append(f"The loop does wait {pct(stats.data_wait_share)} of each step in next(loader), but "
                      "queued GPU work hid it: the GPU did not starve.")
    advice += do_not_tune_pcie(stats)
    advice.append("To go faster make the step itself cheaper: mixed precision, torch.compile, or "
                  "better-shaped kernels.")
    return advice


def sync_bound_advice() -> list[str]:
    return [
        "Look for host-GPU synchronisation inside the step: loss.item(), .cpu(), printing a tensor, "
        "torch.cuda.synchronize(); log every N steps instead of every step.",
        "`xfertop attach PID` shows where the main thread blocks.",
    ]


def healthy_advice(stats: WindowStats, hidden_wait: bool) -> list[str]:
    advice = ["Nothing to tune in the input pipeline."]
    if hidden_wait:
        advice.append(f"The {pct(stats.data_wait_share)} wait in next(loader) was hidden by queued GPU "
                      "work: not starvation.")
    return advice + do_not_tune_pcie(stats)


def straggler_advice(rank: int | None) -> list[str]:
    name = f"rank {rank}" if rank is not None else "the slow rank"
    return [
        f"Inspect input loading on {name}: its DataLoader workers, its node's CPU load and its storage.",
        f"The other ranks wait for {name} inside their collectives: fixing it speeds up the whole job.",
    ]
