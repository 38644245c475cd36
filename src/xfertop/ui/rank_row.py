"""One training rank as a table row: step time, where the time goes, throughput and warning flags."""

from __future__ import annotations

from rich.text import Text

from xfertop.analysis.advice import parts_pct
from xfertop.analysis.steps import WindowStats
from xfertop.model.jobs import RankState
from xfertop.ui import chart
from xfertop.ui.format import NA, human_bytes, ms, rate_gb_per_s, samples_rate_text
from xfertop.ui.line_table import Column

#: The rank table's columns, in order. When they do not fit, the highest ``drop_order`` goes first, whole:
#: an 80-column terminal keeps where the time goes and the flags that say why (FLAGS takes what is left).
COLUMNS = (
    Column("JOB"),
    Column("RANK"),
    Column("STATUS"),
    Column("STEP"),
    Column("HISTORY", drop_order=6),
    Column("HOST: STEP PARTS"),
    Column("WAIT", drop_order=1),
    Column("LOOP", drop_order=3),
    Column("COPY", drop_order=4),
    Column("MODEL", drop_order=5),
    Column("SYNC", drop_order=10),
    Column("GPU BUSY", drop_order=2),
    Column("SAMPLES/S", drop_order=7),
    Column("H2D", drop_order=8),
    Column("PINNED", drop_order=9),
    # Wide enough for its longest single flag, so figures go before a flag is cut.
    Column("FLAGS", fill=True, min_width=len("pageable non_blocking")),
)
COLUMN_NAMES = tuple(column.name for column in COLUMNS)
#: The parts of the stacked bar: the host's step on one clock (they add up to the whole bar): name, the
#: letter its cells are drawn with, colour. Letters as well as colours: the bar reads the same without
#: colour (docs/ui.md). The GPU's busy share is a column of its own, on its own clock.
SEGMENTS = (
    ("wait", "W", "bold black on red"),
    ("loop", "L", "bold black on magenta"),
    ("copy", "C", "bold black on yellow"),
    ("model", "M", "bold black on green"),
    ("sync", "S", "bold black on cyan"),
)
BAR_CELLS = 16
#: Recent steps in the HISTORY column: step time, scaled to the slowest of them.
HISTORY_CELLS = 16
#: Fewer DataLoader workers than this while waiting for data is worth a flag.
_FEW_WORKERS = 2
_WAIT_WORTH_FLAGGING = 0.2


def host_shares(stats: WindowStats) -> tuple[float, float, float, float, float]:
    """Wait, loop (before and after the model), copy, model and sync: shares that add up to 1."""
    return (
        stats.data_wait_share,
        stats.loop_pre_share + stats.loop_post_share,
        stats.copy_share,
        stats.compute_share,
        stats.sync_share,
    )


def breakdown_bar(stats: WindowStats | None, width: int = BAR_CELLS) -> Text:
    if stats is None:
        return Text("·" * width, style="dim")
    pieces = chart.stacked(
        [
            (share, letter, style)
            for share, (_, letter, style) in zip(host_shares(stats), SEGMENTS, strict=True)
        ],
        width,
    )
    return Text.assemble(*pieces)


def legend() -> Text:
    """ "W wait  L loop  C copy  M model  S sync", each letter in its part's colour."""
    text = Text()
    for name, letter, style in SEGMENTS:
        text.append(letter, style=style)
        text.append(f" {name}  ")
    return text


def gpu_busy_text(busy: float | None, stats: WindowStats | None) -> str:
    """The GPU's busy share where NVML measured it; else at most what its measured idle gaps leave
    ("<=80%"); else n/a. Never a share derived from the host's clock."""
    if busy is not None:
        return f"{100 * busy:.0f}%"
    if stats is not None and stats.gpu_idle_share is not None:
        return f"<={100 * (1 - stats.gpu_idle_share):.0f}%"
    return NA


def step_history(rank: RankState, cells: int = HISTORY_CELLS) -> Text:
    walls = [step.wall_ms for step in rank.steps[-cells:]]
    return Text(chart.spark(walls, max(walls, default=0.0), cells), style="cyan")


def rank_flags(rank: RankState, stats: WindowStats | None) -> list[str]:
    flags = []
    if stats is not None and stats.pageable_non_blocking_step_fraction:
        flags.append("pageable non_blocking")
    elif stats is not None and stats.pinned_step_fraction is not None and stats.pinned_step_fraction < 1:
        flags.append("pageable copies")
    # The loader whose steps waited in the window (the demo's second phase read "no workers" from the
    # first phase's loader, the ring's longest-iterated, after its new loader with 2 workers took over).
    workers = rank.dataloader_workers
    if stats is not None and stats.waiting_loader_workers is not None:
        workers = stats.waiting_loader_workers
    if (
        workers is not None
        and workers < _FEW_WORKERS
        and stats is not None
        and stats.data_wait_share >= _WAIT_WORTH_FLAGGING
    ):
        flags.append("no workers" if workers == 0 else "few workers")
    if rank.reporter_disabled:
        flags.append("reporter off")
    return flags


def _status(rank: RankState) -> Text:
    """live, stalled (for how long), or how it ended where the ring says ("exited 3", "killed by SIGINT":
    red where that is a failure); "finished" where it does not."""
    if rank.status == "stalled":
        return Text(f"stalled {rank.heartbeat_age_s:.0f}s", style="bold red")
    if rank.status == "finished" and rank.end is not None:
        return Text(rank.end.describe(), style="red" if rank.end.failed else "dim")
    return Text(rank.status, style="green" if rank.status == "live" else "dim")


def rank_label(rank: RankState) -> str:
    if rank.rank is None:
        return "-"
    return f"{rank.rank}/{rank.world_size}" if rank.world_size else str(rank.rank)


def rank_cells(
    job_name: str, rank: RankState, stats: WindowStats | None, gpu_busy: float | None = None
) -> tuple[str | Text, ...]:
    """The row's cells, in ``COLUMNS`` order; ``stats`` from the app's analysis (None: warming up),
    ``gpu_busy`` the rank's GPU busy share from NVML where known."""
    flags = rank_flags(rank, stats)
    flag_text: str | Text = Text(", ".join(flags), style="yellow") if flags else ""
    if stats is None:
        # Too few steps for a window yet: say so rather than show figures from a handful of steps.
        return (
            job_name,
            rank_label(rank),
            _status(rank),
            "warming up",
            step_history(rank),
            breakdown_bar(None),
            *([NA] * 5),
            gpu_busy_text(gpu_busy, None),
            NA,
            NA,
            human_bytes(rank.pinned_host_bytes),
            flag_text,
        )
    return (
        job_name,
        rank_label(rank),
        _status(rank),
        ms(stats.wall.p50_ms),
        step_history(rank),
        breakdown_bar(stats),
        # Whole percentages that add up to 100, as the verdict and the summary give them.
        *parts_pct(dict(zip([name for name, _, _ in SEGMENTS], host_shares(stats), strict=True))).values(),
        gpu_busy_text(gpu_busy, stats),
        samples_rate_text(stats.samples_per_s),
        rate_gb_per_s(stats.h2d_bytes_per_s),
        human_bytes(rank.pinned_host_bytes),
        flag_text,
    )


def rank_key(rank: RankState) -> str:
    return f"{rank.job_key}|{rank.pid}"
