"""What each scenario must be told, per device kind, and how its measured truth is read.

``SCENARIOS`` maps a scenario id to its script, arguments and expectations. An expectation says which
verdict kinds are right (``kinds``), advice that must appear (``required``: each item a substring, or a
tuple of alternatives of which one must appear) and advice that must not (``forbidden``), all matched
case-insensitively against the verdict's advice lines (not the headline). ``None`` for a device kind
means the scenario claims nothing there, with ``na`` saying why.

``truth_kind`` turns a ``--truth`` measurement into the verdict kind the documented rules
(docs/verdicts.md, xfertop/analysis/thresholds.py) would give to those shares; the scorer calls the
expectation wrong on this machine when that kind is not among ``kinds``. It reads the truth's six
``parts`` (wait, loop_pre, copy, model, sync, loop_post: xfertop's host clock) where the truth has them,
else the four older shares.

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
#: The loop's own work (loop_pre + loop_post) from this share of the step, the largest of the parts past
#: their bars, is loop-bound, as xfertop's loop-work rule reads it (docs/verdicts.md). Until session 26
#: the truth also asked for the model under half the step, which xfertop's rules never did: a CPU job with
#: 24% of its step in an EMA update after the optimizer step and 14% of waiting read input-bound here.
LOOP_WARN_SHARE = 0.10
STRAGGLER_WARN_EXCESS_SHARE = 0.10
STRAGGLER_VICTIM_COMPUTE_EXCESS_SHARE = 0.05

Required = str | tuple[str, ...]

#: What a window of a job's set-up (before its training loop) may read: "not in a training loop (yet)".
SETUP_KINDS = ("warming-up",)


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
    #: A job with a long set-up before its loop prints a line starting with this when the set-up is over:
    #: every poll answered before it must read one of ``SETUP_KINDS`` (or see no job), never a bottleneck.
    setup_line: str | None = None

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
                ("sync-bound", "loop-bound", "host-bound"),
                required=(
                    (
                        ".item()",
                        ".cpu()",
                        ".tolist()",
                        "after the step",
                        "after the optimizer step",
                        "sync_every_step.py:",
                    ),
                ),
                forbidden=("num_workers", "pin_memory=True"),
                why="the GPU idles while the host syncs (.item(), .cpu(), .tolist()) and then does its "
                "per-step bookkeeping in Python: sync-bound where the syncs' wait is the larger part, "
                "loop-bound where the Python after the step is (the truth, synchronised, reads the "
                "bookkeeping as loop_post); host-bound naming the sync where neither is told apart",
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
                ("launch-bound",),
                required=(("torch.compile", "CUDA graph"),),
                forbidden=("num_workers", "pin_memory"),
                why="the GPU mostly waits for the host's launches of ~1,500 tiny kernels a step: "
                "fewer, bigger kernels (torch.compile / CUDA graphs) is the fix. The truth, "
                "synchronised, counts the launches as the model (compute-bound): truth_kind reads "
                "that as launch-bound where launch-bound is expected",
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
        Scenario(
            "r",
            "loop_augment.py",
            (),
            "per-batch augmentation on the CPU in the loop body (float, normalise, flip, interpolate, noise) "
            "before .to(device); small CNN",
            cpu=Expect(
                ("loop-bound",),
                required=(("Dataset", "workers"),),
                forbidden=("pin_memory", "Raise num_workers", "torch.compile"),
                why="the loop's own work before the copy is most of the step and the model is small: "
                "moving the augmentation into the Dataset (workers) is the fix, not the model",
            ),
            cuda=Expect(
                ("loop-bound",),
                required=(("Dataset", "workers"), "GPU"),
                forbidden=("Raise num_workers", "torch.compile"),
                why="the GPU idles while the host augments in the loop body: into the Dataset (workers) "
                "or onto the GPU",
            ),
        ),
        Scenario(
            "s",
            "loop_logging.py",
            (),
            "after optimizer.step(): per-class counts, per-feature running stats in Python and a JSON "
            "line every step (one loss.item()); small MLP",
            cpu=Expect(
                ("loop-bound",),
                required=(("after the step", "after the optimizer step", "loop_logging.py:"),),
                forbidden=("num_workers", "pin_memory", "torch.compile"),
                why="the loop's own Python after the step is most of it, not the one sync: its lines (or "
                "'after the step') must be named",
            ),
            cuda=Expect(
                ("loop-bound",),
                required=(("after the step", "after the optimizer step", "loop_logging.py:"),),
                forbidden=("num_workers", "pin_memory=True", "torch.compile"),
                why="the GPU idles while the loop logs in Python after the step; the one loss.item() waits "
                "for a small model only",
            ),
        ),
        Scenario(
            "t",
            "tiny_layers.py",
            (),
            "no DataLoader, data on the device, 120 x Linear(64,64)+ReLU at batch 32, loss.item() every step",
            cpu=Expect(
                ("compute-bound",),
                required=(("torch.compile", "CUDA graph"),),
                forbidden=("num_workers", "pin_memory"),
                why="on a CPU there is no launch to wait for: the tiny layers are the compute",
            ),
            cuda=Expect(
                ("launch-bound",),
                required=(("torch.compile", "CUDA graph"),),
                forbidden=("num_workers", "pin_memory"),
                why="~1,000 tiny kernels a step: the GPU is busy well under half the time while the host "
                "launches them; a synchronised truth reads compute-bound, which truth_kind reads as "
                "launch-bound here",
            ),
            modes_na={"watch": "no DataLoader for xfertop.watch(loader) to wrap"},
        ),
        Scenario(
            "u",
            "slow_setup.py",
            (),
            "~8-10 s of data building in Python before the first step, then a compute-bound Transformer LM",
            cpu=Expect(("compute-bound",), forbidden=_COMPUTE.forbidden),
            cuda=Expect(("compute-bound",), forbidden=_COMPUTE.forbidden),
            setup_line="data: ",
        ),
    ]
}


def truth_parts(truth: dict[str, Any]) -> dict[str, float]:
    """The truth's six parts of the host clock; from the four older shares for a truth that has none
    (measured before they existed): what was neither data, copy nor compute is read as sync."""
    parts = truth.get("parts")
    if parts:
        return {key: float(parts.get(key) or 0.0) for key in PARTS}
    return {
        "wait": truth["data_share"],
        "loop_pre": 0.0,
        "copy": truth["copy_share"],
        "model": truth["compute_share"],
        "sync": truth["sync_or_host_share"],
        "loop_post": 0.0,
    }


#: The host clock's six parts, in the order a step runs them.
PARTS = ("wait", "loop_pre", "copy", "model", "sync", "loop_post")


def truth_kind(measured: dict[str, Any], device: str, expect: Expect | None = None) -> str:
    """The verdict kind that the documented rules give to the measured shares.

    Of the parts that keep the model from running, the largest one past its bar names the bottleneck:
    waiting for data (``wait`` >= 10%: input-bound), the copy (>= 10%: copy-bound), the loop's own work
    (``loop_pre + loop_post`` >= 10%: loop-bound). Then, on a GPU,
    host time outside the model of 30% or more (busy below 70%) is loop-bound or sync-bound, whichever
    part is larger; on a CPU nothing is asynchronous, so host time outside the named parts is compute
    too. Compute-bound at 90%, healthy otherwise.

    A GPU truth is synchronised after every phase, so it cannot show launch-bound: a model phase of tiny
    kernels reads as the model's time (compute-bound). Where ``expect`` says launch-bound on a GPU, a
    compute-bound truth is read as launch-bound (the expectation, not the truth, says which).
    """
    ranks = measured.get("ranks") or []
    if len(ranks) >= 2 and _straggler(ranks):
        return "straggler"
    parts = truth_parts(measured["truth"])
    loop = parts["loop_pre"] + parts["loop_post"]
    candidates = []
    if parts["wait"] >= INPUT_WARN_SHARE:
        candidates.append((parts["wait"], 2, "input-bound"))
    if parts["copy"] >= COPY_WARN_SHARE:
        candidates.append((parts["copy"], 1, "copy-bound"))
    if loop >= LOOP_WARN_SHARE:
        candidates.append((loop, 0, "loop-bound"))
    if candidates:  # the largest; on a tie, data before copy before the loop (as the rules were)
        return max(candidates)[2]
    other = 1.0 - parts["wait"] - parts["copy"] - parts["model"]
    if device == "cuda" and other >= 1 - SYNC_GPU_BUSY_WARN_SHARE:
        return "loop-bound" if loop > parts["sync"] else "sync-bound"
    if parts["model"] + (other if device != "cuda" else 0.0) >= COMPUTE_BOUND_SHARE:
        if device == "cuda" and expect is not None and "launch-bound" in expect.kinds:
            return "launch-bound"
        return "compute-bound"
    return "healthy"


def _straggler(ranks: list[dict[str, Any]]) -> bool:
    """xfertop's straggler rule on measured per-rank truths: the worst rank's data share 10 points above the
    others' median, and the others' compute (ms, synchronised: it holds their wait in the all-reduce)
    above the straggler's by 5% of its step."""
    shares = [r["truth"]["data_share"] for r in ranks]
    worst = max(range(len(ranks)), key=lambda i: shares[i])
    others_share = statistics.median(s for i, s in enumerate(shares) if i != worst)
    if shares[worst] - others_share < STRAGGLER_WARN_EXCESS_SHARE:
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
