"""The benchmark cases, by name (or by their letters in docs/acceptance.md). Each case is
``run(ctx) -> CaseResult``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from xfertop.bench.method import GIB, MIB, SAMPLE_TARGET_BYTES, CopyOps
from xfertop.model.bench import CaseResult


@dataclass
class CaseContext:
    ops: CopyOps
    gpu_index: int = 0
    samples: int = 3
    #: Size of the single-size copy cases.
    copy_bytes: int = 256 * MIB
    sweep_bytes: tuple[int, ...] = ()
    target_bytes: int = SAMPLE_TARGET_BYTES
    #: NUMA node of the GPU's PCIe device (sysfs), None when unknown.
    gpu_numa_node: int | None = None
    #: progress(fraction 0..1, text)
    progress: Callable[[float, str], None] = field(default=lambda fraction, text: None)


@dataclass(frozen=True)
class CaseSpec:
    name: str
    letter: str
    title: str
    run: Callable[[CaseContext], CaseResult]
    #: Runs only on the CUDA backend (torch streams, DataLoader, NUMA binding...).
    cuda_only: bool
    in_check: bool


def _specs() -> dict[str, CaseSpec]:
    from xfertop.bench.cases import copies, dataloader, streams, system

    specs = [
        CaseSpec(
            "sync_baseline",
            "a",
            "pageable x.to(device), the classic recipe",
            copies.sync_baseline,
            False,
            True,
        ),
        CaseSpec("pinned", "b", "pinned H2D, blocking copy", copies.pinned, False, False),
        CaseSpec("pinned_nb", "c", "pinned H2D, non_blocking", copies.pinned_nb, False, True),
        CaseSpec("d2h", "d", "D2H, pageable and pinned", copies.d2h, False, True),
        CaseSpec("bidir", "e", "bidirectional, pinned", copies.bidir, False, True),
        CaseSpec("sweep", "f", "size sweep, pinned and pageable", copies.sweep, False, False),
        CaseSpec("trap", "g", "the non_blocking trap: host call time vs transfer", streams.trap, True, False),
        CaseSpec("overlap", "h", "copy/compute overlap on a side stream", streams.overlap, True, False),
        CaseSpec(
            "dataloader", "i", "DataLoader: num_workers x pin_memory", dataloader.dataloader, True, False
        ),
        CaseSpec("model_step", "j", "copy vs compute in a small model step", streams.model_step, True, False),
        CaseSpec("all_gpus", "k", "every GPU at once", system.all_gpus, True, True),
        CaseSpec(
            "numa", "l", "pinned memory on the GPU's NUMA node vs a remote one", system.numa, True, True
        ),
    ]
    return {s.name: s for s in specs}


CASE_NAMES: tuple[str, ...] = (
    "sync_baseline",
    "pinned",
    "pinned_nb",
    "d2h",
    "bidir",
    "sweep",
    "trap",
    "overlap",
    "dataloader",
    "model_step",
    "all_gpus",
    "numa",
)
CHECK_CASES: tuple[str, ...] = ("sync_baseline", "pinned_nb", "d2h", "bidir", "all_gpus", "numa")


def case_spec(name: str) -> CaseSpec:
    specs = _specs()
    if name not in specs:
        raise KeyError(f"unknown case {name!r}: choose from {', '.join(CASE_NAMES)}")
    return specs[name]


def resolve_cases(requested: list[str] | None, *, check: bool) -> list[str]:
    """Case names in run order; accepts names or their letters (a..l, docs/acceptance.md)."""
    if check:
        return list(CHECK_CASES)
    if not requested:
        return list(CASE_NAMES)
    by_letter = {s.letter: s.name for s in _specs().values()}
    names = [by_letter.get(r, r) for r in requested]
    for name in names:
        case_spec(name)
    return [n for n in CASE_NAMES if n in names]


__all__ = ["CASE_NAMES", "CHECK_CASES", "GIB", "CaseContext", "CaseSpec", "case_spec", "resolve_cases"]
