"""What each scenario must be told, per device kind, and how its measured truth is read.

``SCENARIOS`` maps a scenario id to its script, arguments and expectations. An expectation says which
verdict kinds are right (``kinds``), advice that must appear (``required``: each item a substring, or a
tuple of alternatives of which one must appear) and advice that must not (``forbidden``), all matched
case-insensitively against the verdict's advice lines (not the headline). ``None`` for a device kind
means the scenario claims nothing there, with ``na`` saying why.

``truth_kind`` turns a ``--truth`` measurement into the verdict kind the documented rules
(docs/verdicts.md, xfertop/analysis/thresholds.py) would give to those shares; the scorer calls the
expectation wrong on this machine when that kind is not among ``kinds``.

Plain data: no xfertop import (the scorer and the tests use it; the scripts do not).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

# The published bars (docs/verdicts.md), repeated here so the truth is read without importing xfertop.
INPUT_WARN_SHARE = 0.10
COPY_WARN_SHARE = 0.10
SYNC_GPU_BUSY_WARN_SHARE = 0.70
COMPUTE_BOUND_SHARE = 0.90
STRAGGLER_WARN_EXCESS_SHARE = 0.10
STRAGGLER_VICTIM_COMPUTE_EXCESS_SHARE = 0.05

Required = str | tuple[str, ...]


@dataclass(frozen=True)
class Expect:
    kinds: tuple[str, ...]
    required: tuple[Required, ...] = ()
    forbidden: tuple[str, ...] = ()
    why: str = ""


@dataclass(frozen=True)
class Scenario:
    id: str
    script: str
    args: tuple[str, ...]
    what: str
    cpu: Expect | None
    cuda: Expect | None
    na: dict[str, str] = field(default_factory=dict)
    #: True for jobs of several ranks (attach targets a rank, not the launcher).
    ddp: bool = False
    #: May share a GPU machine with other such jobs under ``score_scenarios.py --parallel``: its bottleneck
    #: is on the host (input-bound), so another job's kernels barely change its truth or its verdict.
    #: Jobs whose truth depends on the GPU's speed or on NVML's busy share run alone.
    host_bound: bool = False
    #: Modes that cannot see this job, with why: still run (exit code and result must match the plain
    #: run), not scored.
    modes_na: dict[str, str] = field(default_factory=dict)

    def expect(self, device: str) -> Expect | None:
        return self.cuda if device == "cuda" else self.cpu


_INPUT_WORKERS = Expect(
    ("input-bound",),
    required=(("num_workers", "more workers cannot help"),),
    forbidden=("persistent_workers=True",),
    why="the loader cannot keep up; more (or any) workers is the fix, unless the cores "
    "they may use are saturated already (the 2-core VM), which the advice must say",
)
_COMPUTE = Expect(
    ("compute-bound",),
    forbidden=("num_workers", "pin_memory=True"),
    why="the step itself is the cost; the input pipeline keeps up",
)

SCENARIOS: dict[str, Scenario] = {
    s.id: s
    for s in [
        Scenario(
            "a",
            "slow_getitem.py",
            (),
            "slow __getitem__ (1 ms storage latency + JSON parse), num_workers=0",
            cpu=_INPUT_WORKERS,
            cuda=_INPUT_WORKERS,
            host_bound=True,
        ),
        Scenario(
            "b",
            "image_pipeline.py",
            (),
            "image decode + augmentation with too few workers (JPEG+torchvision, or a zlib stand-in)",
            cpu=_INPUT_WORKERS,
            cuda=_INPUT_WORKERS,
            host_bound=True,
        ),
        Scenario(
            "c",
            "confined_workers.py",
            (),
            "4 workers pinned to 1 core by worker_init_fn (log-mel features)",
            cpu=Expect(
                ("input-bound",),
                required=(
                    ("affinity", "confined", "cores it may use", "allowed cores", "sched_setaffinity"),
                ),
                forbidden=("Raise num_workers",),
                why="the workers share one core: more of them cannot help, widening their affinity would",
            ),
            cuda=Expect(
                ("input-bound",),
                required=(
                    ("affinity", "confined", "cores it may use", "allowed cores", "sched_setaffinity"),
                ),
                forbidden=("Raise num_workers",),
            ),
            host_bound=True,
        ),
        Scenario(
            "d",
            "pageable_copy.py",
            ("--workers", "0"),
            "pre-batched pageable batches, non_blocking=True, num_workers=0 (100 MB on GPU, 1.5 MB on CPU)",
            cpu=Expect(
                ("compute-bound", "healthy"),
                forbidden=("pin_memory",),
                why="no host-to-device copy on a CPU: pinning cannot help",
            ),
            cuda=Expect(
                ("copy-bound",),
                required=("pin_memory=True",),
                forbidden=("Do not tune PCIe",),
                why="pageable 100 MB copies are synchronous and slow",
            ),
        ),
        Scenario(
            "e",
            "pageable_copy.py",
            ("--workers", "4"),
            "pre-batched pageable batches, non_blocking=True, num_workers=4",
            cpu=None,
            cuda=Expect(("copy-bound",), required=("pin_memory=True",), forbidden=("Do not tune PCIe",)),
            na={"cpu": "no host-to-device copy on a CPU; what is left is 4 workers' IPC on the VM's cores"},
        ),
        Scenario(
            "f",
            "pinned_copy.py",
            (),
            "uint8 batches, pin_memory=True, non_blocking=True, normalise on device",
            cpu=Expect(("healthy", "compute-bound"), forbidden=("pin_memory", "Raise num_workers")),
            cuda=Expect(
                ("healthy", "compute-bound"),
                forbidden=("pin_memory=True", "Raise num_workers"),
                why="a tuned pipeline: nothing to change in it",
            ),
        ),
        Scenario(
            "g",
            "compute_bound.py",
            (),
            "Transformer LM, in-memory tokens, 2 workers",
            cpu=Expect(("compute-bound",), required=("torch.compile",), forbidden=_COMPUTE.forbidden),
            cuda=Expect(("compute-bound",), required=("torch.compile",), forbidden=_COMPUTE.forbidden),
        ),
        Scenario(
            "n1",
            "compute_bound.py",
            ("--bf16",),
            "(n) the same under bf16 autocast",
            cpu=_COMPUTE,
            cuda=_COMPUTE,
        ),
        Scenario(
            "n2",
            "compute_bound.py",
            ("--compile",),
            "(n) the same under torch.compile",
            cpu=_COMPUTE,
            cuda=_COMPUTE,
        ),
        Scenario(
            "h",
            "sync_every_step.py",
            (),
            "loss.item() + host-side top-5/confusion bookkeeping every step",
            cpu=Expect(
                ("compute-bound", "healthy"),
                forbidden=("Raise num_workers", "pin_memory"),
                why="on a CPU the bookkeeping is host compute: there is no device to hold back",
            ),
            cuda=Expect(
                ("sync-bound", "host-bound"),
                required=(".item()",),
                forbidden=("num_workers", "pin_memory=True"),
                why="the GPU idles while the host does its per-step bookkeeping; without a "
                "sync seen, host-bound naming the sync is right",
            ),
        ),
        Scenario(
            "i",
            "launch_bound.py",
            (),
            "96 tiny residual blocks, batch 16: launch-bound",
            cpu=Expect(
                ("compute-bound",),
                required=("torch.compile",),
                forbidden=("num_workers", "pin_memory", "loss.item()"),
            ),
            cuda=Expect(
                ("compute-bound", "host-bound"),
                required=(("torch.compile", "CUDA graphs"),),
                forbidden=("num_workers", "pin_memory"),
                why="fewer, bigger kernels (torch.compile / CUDA graphs) is the fix; the GPU "
                "waits for the host's launches (host-bound) or the truth's synchronised "
                "compute counts the launches (compute-bound)",
            ),
        ),
        Scenario(
            "j",
            "short_epochs.py",
            (),
            "non-persistent workers, 10-step epochs, 4 workers, 1 ms/sample latency",
            cpu=Expect(
                ("input-bound",),
                required=("persistent_workers=True",),
                forbidden=("Raise num_workers",),
                why="the wait sits at epoch starts, where the 4 workers are started again",
            ),
            cuda=Expect(
                ("input-bound",), required=("persistent_workers=True",), forbidden=("Raise num_workers",)
            ),
            host_bound=True,
        ),
        Scenario(
            "k",
            "train_val.py",
            (),
            "train loader + a validation loader every 25 steps, one loop",
            cpu=Expect(("compute-bound", "healthy"), forbidden=("num_workers=0", "Raise num_workers")),
            cuda=Expect(("compute-bound", "healthy"), forbidden=("num_workers=0", "Raise num_workers")),
        ),
        Scenario(
            "l",
            "lightning_job.py",
            (),
            "Lightning Trainer, slow dataset, 2 workers",
            cpu=_INPUT_WORKERS,
            cuda=_INPUT_WORKERS,
            host_bound=True,
        ),
        Scenario(
            "m",
            "hf_trainer_job.py",
            (),
            "Hugging Face Trainer, BERT from a config, data in memory",
            cpu=_COMPUTE,
            cuda=_COMPUTE,
        ),
        Scenario(
            "o",
            "ddp_straggler.py",
            (),
            "2-rank DDP (torchrun), rank 1's samples 20x slower to load",
            cpu=Expect(("straggler",), required=("rank 1",), why="rank 1 holds rank 0 back"),
            cuda=Expect(("straggler",), required=("rank 1",)),
            ddp=True,
            host_bound=True,
        ),
        Scenario(
            "o0",
            "ddp_straggler.py",
            ("--balanced",),
            "(o) the same 2-rank DDP job, balanced: the control",
            cpu=Expect(
                ("compute-bound", "healthy", "input-bound"),
                forbidden=("rank 1",),
                why="no rank holds the other back: no straggler",
            ),
            cuda=Expect(("compute-bound", "healthy", "input-bound", "host-bound"), forbidden=("rank 1",)),
            ddp=True,
            host_bound=True,
        ),
        Scenario(
            "p",
            "iterable_dataset.py",
            (),
            "IterableDataset: Python tokenisation in 2 workers",
            cpu=_INPUT_WORKERS,
            cuda=_INPUT_WORKERS,
            host_bound=True,
        ),
        Scenario(
            "q",
            "no_dataloader.py",
            (),
            "no DataLoader: data on the device, sliced per step",
            cpu=Expect(("compute-bound",)),
            cuda=Expect(("compute-bound",)),
            modes_na={
                "watch": "no DataLoader for xfertop.watch(loader) to wrap (xfertop run marks its steps "
                "at optimizer.step(); attach samples it)"
            },
        ),
    ]
}


def truth_kind(measured: dict[str, Any], device: str) -> str:
    """The verdict kind that the documented rules give to the measured shares.

    On a CPU nothing is asynchronous, so host time outside the named phases is compute too; on a GPU it is
    time the device was held back (sync-bound when it is 30% or more, i.e. busy below 70%).
    """
    ranks = measured.get("ranks") or []
    if len(ranks) >= 2 and _straggler(ranks):
        return "straggler"
    truth = measured["truth"]
    data, copy = truth["data_share"], truth["copy_share"]
    compute, other = truth["compute_share"], truth["sync_or_host_share"]
    if data >= INPUT_WARN_SHARE and data >= copy:
        return "input-bound"
    if copy >= COPY_WARN_SHARE:
        return "copy-bound"
    if device == "cuda" and other >= 1 - SYNC_GPU_BUSY_WARN_SHARE:
        return "sync-bound"
    if compute + (other if device != "cuda" else 0.0) >= COMPUTE_BOUND_SHARE:
        return "compute-bound"
    return "healthy"


def _straggler(ranks: list[dict[str, Any]]) -> bool:
    """xfertop's straggler rule on measured per-rank truths: the worst rank's data share 10 points above the
    median, and the others' compute (ms) above the straggler's by 5% of its step."""
    shares = [r["truth"]["data_share"] for r in ranks]
    worst = max(range(len(ranks)), key=lambda i: shares[i])
    if shares[worst] - statistics.median(shares) < STRAGGLER_WARN_EXCESS_SHARE:
        return False
    step_ms = 1000 * ranks[worst]["truth_wall_s"] / max(1, ranks[worst]["truth_steps"])
    others = statistics.median(r["ms_per_boundary"]["compute"] for i, r in enumerate(ranks) if i != worst)
    return (others - ranks[worst]["ms_per_boundary"]["compute"]) / max(
        step_ms, 1e-9
    ) >= STRAGGLER_VICTIM_COMPUTE_EXCESS_SHARE


def advice_findings(advice: list[str], expect: Expect) -> tuple[list[str], list[str]]:
    """(required items missing, forbidden items present) in one verdict's advice."""
    text = "\n".join(advice).lower()
    missing = []
    for item in expect.required:
        options = (item,) if isinstance(item, str) else item
        if not any(option.lower() in text for option in options):
            missing.append(" | ".join(options))
    present = [item for item in expect.forbidden if item.lower() in text]
    return missing, present
