"""Builders for benchmark results, shaped like what the H200 gave (GPU-FACTS.md, research/h200_probe.txt)."""

from __future__ import annotations

from xfertop.analysis.acceptance import Thresholds, exit_code_for, judge_run, overall_status
from xfertop.model.bench import BenchRun, CaseResult, LinkFacts, MachineFacts, Measurement

MIB = 1024 * 1024
H200_MACHINE = MachineFacts(
    hostname="h200-box",
    backend="cuda",
    gpu_names=("NVIDIA H200",),
    driver_version="580.159.04",
    cuda_version="13.0",
    torch_version="2.11.0+cu130",
    python_version="3.12.3",
    cpu_count=16,
    numa_nodes=1,
    gpu_numa_node=0,
    process_cpus=tuple(range(16)),
    gpu_local_cpus=tuple(range(16)),
)
GEN5_X16 = LinkFacts(0, 5, 16, 5, 16, 5, "P0", 0, 0)


def row(
    label: str, direction: str, memory: str, value: float, size: int = 256 * MIB, **kw: object
) -> Measurement:
    spread = kw.pop("spread", 0.01)
    return Measurement(
        label=label,
        direction=direction,
        memory=memory,
        size_bytes=size,
        value=value,  # type: ignore[arg-type]
        samples=(value,) * 3,
        value_min=value * (1 - spread / 2),  # type: ignore[operator]
        value_max=value * (1 + spread / 2),
        warmup_value=value * 0.9,
        verified=True,  # type: ignore[operator]
        **kw,
    )  # type: ignore[arg-type]


def h200_cases(h2d: float = 55.0, d2h: float = 55.2, verified: bool = True) -> list[CaseResult]:
    pinned = row("pinned H2D non_blocking", "h2d", "pinned", h2d)
    if not verified:
        pinned = Measurement(**{**pinned.__dict__, "verified": False})
    return [
        CaseResult(
            "sync_baseline",
            "pageable",
            (row("pageable x.to(device)", "h2d", "pageable", 7.3, 1024 * MIB),),
            1.0,
        ),
        CaseResult("pinned_nb", "pinned", (pinned,), 0.5),
        CaseResult(
            "d2h",
            "d2h",
            (row("pageable D2H", "d2h", "pageable", 15.0), row("pinned D2H", "d2h", "pinned", d2h)),
            0.5,
        ),
        CaseResult("bidir", "bidir", (row("pinned H2D+D2H total", "bidir", "pinned", 69.0),), 0.5),
        CaseResult(
            "sweep",
            "sweep",
            tuple(
                row(f"pinned H2D {s}", "h2d", "pinned", v, s * MIB)
                for s, v in ((1, 37.8), (16, 53.6), (256, 55.0))
            ),
            2.0,
        ),
        CaseResult("all_gpus", "all", (), 0.0, skipped_reason="one GPU visible"),
    ]


def make_run(
    cases: list[CaseResult] | None = None,
    link: LinkFacts = GEN5_X16,
    machine: MachineFacts = H200_MACHINE,
    thresholds: Thresholds | None = None,
    started: str = "2026-11-29T18:00:00+00:00",
) -> BenchRun:
    cases = h200_cases() if cases is None else cases
    thresholds = thresholds or Thresholds()
    verdicts = judge_run(cases, [link], machine, thresholds)
    overall = overall_status(verdicts)
    return BenchRun(
        1,
        "check",
        started,
        12.5,
        machine,
        (link,),
        tuple(cases),
        tuple(verdicts),
        overall,
        exit_code_for(overall),
        thresholds.as_dict(),
    )
