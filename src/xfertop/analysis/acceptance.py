"""Acceptance math: thresholds and pass/warn/fail verdicts. Pure: results in, verdicts out.

Link rates come from ``xfertop.analysis.pcie_link`` (per direction, after line encoding, before packet
headers; Gen5 x16 = 63.0 GB/s). Sources and the reasoning behind 0.82 / 0.75: docs/acceptance.md and
research/acceptance.md (c).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from statistics import median

from xfertop.analysis.pcie_link import link_bytes_per_s
from xfertop.model.bench import CaseResult, LinkFacts, MachineFacts, Measurement, Status, Verdict

MIB = 1024 * 1024
PCIE_WIDTHS: tuple[int, ...] = (1, 2, 4, 8, 16)
#: Cases whose pinned H2D/D2H rows are judged against the link.
JUDGED_CASES = ("pinned", "pinned_nb", "d2h")


@dataclass(frozen=True)
class Thresholds:
    """What `xfertop check` judges against; every field can be overridden from the command line."""

    #: Pinned H2D/D2H pass at >= pass_ratio x the link's theoretical rate, warn from warn_ratio, fail below.
    pass_ratio: float = 0.82
    warn_ratio: float = 0.75
    #: Only copies at least this large are judged (smaller ones are latency-bound).
    min_judged_bytes: int = 64 * MIB
    #: PCIe replays allowed during the run (DCGM's max_pcie_replays) and correctable errors (DCGM: 0).
    max_replay_delta: int = 80
    max_correctable_delta: int = 0
    #: Expected link; 0 means "what the GPU and slot report as their maximum".
    expect_gen: int = 0
    expect_width: int = 0
    #: A GPU this far below the median of its peers (all-GPU case) gets a warning.
    peer_shortfall_ratio: float = 0.10

    def __post_init__(self) -> None:
        if not 0 < self.warn_ratio <= self.pass_ratio <= 1.0:
            raise ValueError(
                f"need 0 < warn ratio ({self.warn_ratio}) <= pass ratio ({self.pass_ratio}) <= 1"
            )

    def as_dict(self) -> dict[str, float]:
        return {k: float(v) for k, v in asdict(self).items()}


def ratio_status(ratio: float, thresholds: Thresholds) -> Status:
    if ratio >= thresholds.pass_ratio:
        return "pass"
    if ratio >= thresholds.warn_ratio:
        return "warn"
    return "fail"


def overall_status(verdicts: Iterable[Verdict]) -> Status:
    statuses = {v.status for v in verdicts}
    if "fail" in statuses:
        return "fail"
    if "warn" in statuses:
        return "warn"
    return "pass"


def exit_code_for(status: Status) -> int:
    """0 pass (warnings included), 1 fail. Exit 2 (could not run) is decided before any verdict."""
    return 1 if status == "fail" else 0


def judge_link(link: LinkFacts, thresholds: Thresholds) -> list[Verdict]:
    """Generation and width under load against the GPU's own maximum and the slot-capped maximum."""
    name = f"GPU {link.gpu_index} PCIe link"
    if link.gen_current is None or link.width_current is None:
        return [Verdict(name, "skip", "link generation/width not readable here")]
    now = f"Gen{link.gen_current} x{link.width_current}"
    if link.pstate not in (None, "P0"):
        return [
            Verdict(name, "info", f"{now} read in {link.pstate}, not P0: idle links downclock, not judged")
        ]
    verdicts: list[Verdict] = []
    expect_gen = thresholds.expect_gen or link.gen_max or link.gen_current
    expect_width = thresholds.expect_width or link.width_max or link.width_current
    if link.gen_current < expect_gen:
        verdicts.append(
            Verdict(
                f"{name} generation",
                "fail",
                f"{now} under load, below the expected Gen{expect_gen}: reseat or check BIOS",
                link.gen_current,
                expect_gen,
            )
        )
    elif link.gen_gpu_max and link.gen_max and link.gen_max < link.gen_gpu_max and not thresholds.expect_gen:
        verdicts.append(
            Verdict(
                f"{name} generation",
                "warn",
                f"the slot caps this Gen{link.gen_gpu_max} GPU at Gen{link.gen_max}",
                link.gen_current,
                link.gen_gpu_max,
            )
        )
    else:
        verdicts.append(
            Verdict(
                f"{name} generation",
                "pass",
                f"{now} under load (expected Gen{expect_gen})",
                link.gen_current,
                expect_gen,
            )
        )
    width_status: Status = "pass" if link.width_current >= expect_width else "fail"
    verdicts.append(
        Verdict(
            f"{name} width",
            width_status,
            f"x{link.width_current} under load (expected x{expect_width})",
            link.width_current,
            expect_width,
        )
    )
    return verdicts


def judge_errors(link: LinkFacts, thresholds: Thresholds) -> list[Verdict]:
    verdicts = []
    for label, delta, limit in (
        ("replays", link.replay_delta, thresholds.max_replay_delta),
        ("correctable errors", link.correctable_delta, thresholds.max_correctable_delta),
    ):
        name = f"GPU {link.gpu_index} PCIe {label} during run"
        if delta is None:
            verdicts.append(Verdict(name, "skip", f"PCIe {label} counter not readable here"))
        else:
            status: Status = "pass" if delta <= limit else "fail"
            verdicts.append(Verdict(name, status, f"+{delta} (allowed {limit})", delta, limit))
    return verdicts


def _judged_rows(cases: Iterable[CaseResult], thresholds: Thresholds) -> list[tuple[CaseResult, Measurement]]:
    return [
        (case, row)
        for case in cases
        if case.case in JUDGED_CASES
        for row in case.rows
        if row.memory == "pinned"
        and row.direction in ("h2d", "d2h")
        and row.size_bytes >= thresholds.min_judged_bytes
    ]


def judge_bandwidth(cases: Iterable[CaseResult], link: LinkFacts, thresholds: Thresholds) -> list[Verdict]:
    """Pinned H2D/D2H at >= min_judged_bytes against the link's theoretical rate."""
    theory_bytes_per_s = link_bytes_per_s(link.gen_current, link.width_current)
    if theory_bytes_per_s is None:
        return [Verdict("pinned bandwidth", "skip", "no known link generation/width to compare against")]
    theory_gb_per_s = theory_bytes_per_s / 1e9
    verdicts = []
    for _case, row in _judged_rows(cases, thresholds):
        ratio = row.value / theory_gb_per_s
        verdicts.append(
            Verdict(
                f"pinned {row.direction.upper()} {row.size_bytes // MIB} MiB",
                ratio_status(ratio, thresholds),
                f"{row.value:.1f} GB/s = {ratio:.2f} of Gen{link.gen_current} x{link.width_current} "
                f"{theory_gb_per_s:.1f} GB/s",
                round(ratio, 4),
                thresholds.pass_ratio,
                thresholds.warn_ratio,
            )
        )
    if not verdicts:
        verdicts.append(Verdict("pinned bandwidth", "skip", "no pinned copy large enough to judge was run"))
    return verdicts


def judge_verification(cases: Iterable[CaseResult]) -> list[Verdict]:
    bad = [f"{c.case}/{r.label}" for c in cases for r in c.rows if r.verified is False]
    if bad:
        return [Verdict("copied data", "fail", "copied data differed from the source in: " + ", ".join(bad))]
    return [Verdict("copied data", "pass", "every verified copy matched its source")]


def judge_locality(machine: MachineFacts) -> list[Verdict]:
    """The process should be allowed on the CPUs local to the GPU (its NUMA node)."""
    if not machine.gpu_local_cpus:
        return [Verdict("CPU affinity vs GPU", "info", "the GPU's local CPUs are unknown here")]
    local = set(machine.gpu_local_cpus)
    allowed = set(machine.process_cpus)
    if allowed & local:
        where = (
            f"the GPU's NUMA node {machine.gpu_numa_node}"
            if machine.gpu_numa_node is not None
            else "the GPU's local CPUs"
        )
        return [
            Verdict(
                "CPU affinity vs GPU",
                "pass",
                f"{len(allowed & local)} of the process's {len(allowed)} CPUs are on {where}",
            )
        ]
    return [
        Verdict(
            "CPU affinity vs GPU",
            "warn",
            "this process may not run on any CPU local to the GPU: pinned memory lands on a remote node",
        )
    ]


def judge_busy(machine: MachineFacts) -> list[Verdict]:
    """A GPU shared with a running job gives low figures and slows the job: say so (DCGM waits for idle)."""
    if not machine.gpu_busy_pids:
        return []
    pids = ", ".join(str(p) for p in machine.gpu_busy_pids)
    return [
        Verdict(
            "GPU free during the run",
            "warn",
            f"other processes used the GPU (pid {pids}): they competed for PCIe; figures may read low",
        )
    ]


def _rows(cases: Iterable[CaseResult], case_name: str) -> list[Measurement]:
    return [row for case in cases if case.case == case_name for row in case.rows]


def judge_expectations(cases: list[CaseResult], thresholds: Thresholds) -> list[Verdict]:
    """Pageable, bidirectional, all-GPU and NUMA results: reported against documented expectations only."""
    verdicts: list[Verdict] = []
    pinned = {row.direction: row.value for _case, row in _judged_rows(cases, thresholds)}
    for row in _rows(cases, "sync_baseline") + [r for r in _rows(cases, "d2h") if r.memory == "pageable"]:
        ref = pinned.get(row.direction)
        share = f" = {row.value / ref:.0%} of pinned" if ref else ""
        verdicts.append(
            Verdict(
                f"pageable {row.direction.upper()}",
                "info",
                f"{row.value:.1f} GB/s{share} (expected 10-30% of pinned, host dependent)",
                row.value,
            )
        )
    for row in _rows(cases, "bidir"):
        uni = max(pinned.values(), default=0.0)
        gain = f" = {row.value / uni:.2f}x one direction" if uni else ""
        verdicts.append(
            Verdict(
                "bidirectional total",
                "info",
                f"{row.value:.1f} GB/s{gain} (expected 1.2-1.8x; H200 measured ~1.25x)",
                row.value,
            )
        )
    verdicts.extend(_judge_peers(_rows(cases, "all_gpus"), thresholds))
    for row in _rows(cases, "numa"):
        verdicts.append(
            Verdict(f"pinned {row.label}", "info", f"{row.value:.1f} GB/s (remote expected lower)", row.value)
        )
    return verdicts


def _judge_peers(rows: list[Measurement], thresholds: Thresholds) -> list[Verdict]:
    per_gpu = [r for r in rows if r.gpu_index is not None]
    if len(per_gpu) < 2:
        return []
    mid = median(r.value for r in per_gpu)
    verdicts = []
    for row in per_gpu:
        short = row.value < (1 - thresholds.peer_shortfall_ratio) * mid
        verdicts.append(
            Verdict(
                f"GPU {row.gpu_index} {row.direction.upper()} with all GPUs busy",
                "warn" if short else "info",
                f"{row.value:.1f} GB/s vs peer median {mid:.1f}"
                + (": more than 10% below its peers (shared root complex or bad link?)" if short else ""),
                row.value,
            )
        )
    return verdicts


def judge_run(
    cases: list[CaseResult], links: list[LinkFacts], machine: MachineFacts, thresholds: Thresholds
) -> list[Verdict]:
    """Every verdict of a run, in report order. Bandwidth is judged against the first (benchmarked) GPU."""
    verdicts: list[Verdict] = []
    for link in links:
        verdicts += judge_link(link, thresholds)
        verdicts += judge_errors(link, thresholds)
    if links:
        verdicts += judge_bandwidth(cases, links[0], thresholds)
    verdicts += judge_verification(cases)
    verdicts += judge_locality(machine)
    verdicts += judge_busy(machine)
    verdicts += judge_expectations(cases, thresholds)
    return verdicts
