"""The demo job with torch: a small MLP fed by a DataLoader whose batches are slow to load."""

from __future__ import annotations

import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

import xfertop
from xfertop.launch.demo_job import (
    FIXED_PREFETCH_FACTOR,
    MIN_LOAD_MS,
    STARVED_LOAD_OVER_COMPUTE,
    PhaseClock,
    PhaseEnd,
    StopFlag,
    announce,
    fixed_load_ms,
    usable_cores,
    worker_count,
)

CLASSES = 10
#: Batches per epoch: a few thousand, so epochs (and worker restarts) are rare events, as in real jobs.
BATCHES_PER_EPOCH = 5000
#: Compute per step the demo aims for: long enough that receiving a batch from a worker process
#: (~1 ms of unpickling on the main thread) is a small share, short enough to show a change in seconds.
TARGET_STEP_MS = {"cpu": 40.0, "cuda": 20.0}
MAX_PASSES = 16


class SlowBatches(Dataset):
    """Whole batches that take ``load_ms`` each to produce: storage latency (a sleep, which workers
    overlap without needing cores) plus a real decode into a fresh float tensor."""

    def __init__(self, batch_size: int, features: int, load_ms: float) -> None:
        self.batch_size = batch_size
        self.features = features
        self.load_ms = load_ms

    def __len__(self) -> int:
        return BATCHES_PER_EPOCH

    def __getitem__(self, index: int) -> torch.Tensor:
        started = time.perf_counter()
        inputs = torch.rand(self.batch_size, self.features, generator=torch.Generator().manual_seed(index))
        remaining_s = self.load_ms / 1000.0 - (time.perf_counter() - started)
        if remaining_s > 0:
            time.sleep(remaining_s)
        # One tensor per batch (labels are derived from it on the device): each tensor received from a
        # worker costs the main thread ~0.5 ms of unpickling.
        return inputs


def labels_of(inputs: torch.Tensor) -> torch.Tensor:
    """The synthetic task: which tenth of [0, 1) the first feature falls in."""
    return (inputs[:, 0] * CLASSES).long().clamp_(0, CLASSES - 1)


def pick_device(requested: str) -> torch.device:
    if requested == "auto":
        requested = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(requested)
    if device.type == "cuda" and not torch.cuda.is_available():
        announce(f"CUDA is not available to this torch ({torch.__version__}); running on the CPU instead.")
        return torch.device("cpu")
    return device


def build_model(device: torch.device) -> tuple[nn.Module, torch.optim.Optimizer, int, int]:
    """Model, optimizer, batch size and input features: small on a CPU, a few ms of work on a GPU."""
    if device.type == "cuda":
        batch_size, features, hidden = 512, 4096, 8192
    else:
        batch_size, features, hidden = 32, 1024, 1024
    model = nn.Sequential(
        nn.Linear(features, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, CLASSES),
    ).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    return model, optimizer, batch_size, features


def train_step(model: nn.Module, optimizer: torch.optim.Optimizer, inputs: torch.Tensor, passes: int) -> None:
    # ``passes`` forward/backward passes over the batch stand in for a bigger model, so a step costs
    # about the same on every machine. No loss.item(): a host sync every step would turn the story
    # into a sync-bound one.
    labels = labels_of(inputs)
    optimizer.zero_grad(set_to_none=True)
    for _ in range(passes):
        nn.functional.cross_entropy(model(inputs), labels).backward()
    optimizer.step()


def measure_pass_ms(
    model: nn.Module, optimizer: torch.optim.Optimizer, device: torch.device, batch_size: int, features: int
) -> float:
    """Time of one forward/backward pass on this machine, measured outside the step clock."""
    inputs = torch.rand(batch_size, features, device=device)
    times_ms = []
    for attempt in range(8):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        started = time.perf_counter()
        train_step(model, optimizer, inputs, passes=1)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        if attempt >= 3:  # the first passes pay for allocation and kernel selection
            times_ms.append((time.perf_counter() - started) * 1000.0)
    return min(times_ms)  # the least contended pass: other processes only ever add time


def train_phase(
    loader: DataLoader,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    passes: int,
    device: torch.device,
    end: PhaseEnd,
    stop: StopFlag,
) -> bool:
    """Train until the phase ends (True) or the job is asked to stop (False)."""
    clock = PhaseClock(end)
    while True:  # epochs
        for batch in xfertop.watch(loader):
            inputs = xfertop.to_device(batch, device, non_blocking=True)
            train_step(model, optimizer, inputs, passes)
            if stop.is_set():
                return False
            if clock.step_done():
                return True


def run_torch(requested_device: str, starved_end: PhaseEnd, fixed_end: PhaseEnd, stop: StopFlag) -> None:
    device = pick_device(requested_device)
    if device.type == "cpu":
        torch.set_num_threads(1)  # a demo should not take every core of a shared machine
    model, optimizer, batch_size, features = build_model(device)
    pass_ms = measure_pass_ms(model, optimizer, device, batch_size, features)
    passes = max(1, min(MAX_PASSES, round(TARGET_STEP_MS[device.type] / pass_ms)))
    compute_ms = passes * pass_ms
    load_ms = max(MIN_LOAD_MS, STARVED_LOAD_OVER_COMPUTE * compute_ms)
    dataset = SlowBatches(batch_size, features, load_ms)

    announce(
        f"on {device}; a step computes in ~{compute_ms:.0f} ms, a batch takes ~{load_ms:.0f} ms to "
        "load. Phase 1, starved: num_workers=0, pageable memory."
    )
    # batch_size=None: the dataset already yields whole batches.
    starved = DataLoader(dataset, batch_size=None, num_workers=0, pin_memory=False)
    if not train_phase(starved, model, optimizer, passes, device, starved_end, stop):
        return
    del starved

    workers = worker_count(load_ms, compute_ms)
    dataset.load_ms = fixed_load_ms(load_ms, compute_ms, workers)
    read_ahead = (
        f", storage read-ahead: a batch loads in {dataset.load_ms:.0f} ms"
        if dataset.load_ms < load_ms
        else ""
    )
    announce(
        f"phase 2, fixed: num_workers={workers} (cores: {usable_cores()}), "
        f"pin_memory={device.type == 'cuda'}, non_blocking copies, "
        f"prefetch_factor={FIXED_PREFETCH_FACTOR}, persistent_workers{read_ahead}."
    )
    fixed = DataLoader(
        dataset,
        batch_size=None,
        num_workers=workers,
        pin_memory=device.type == "cuda",
        prefetch_factor=FIXED_PREFETCH_FACTOR,
        persistent_workers=True,
    )
    if train_phase(fixed, model, optimizer, passes, device, fixed_end, stop):
        announce("fixed phase over; exiting.")
