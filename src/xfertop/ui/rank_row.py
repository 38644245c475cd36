"""One training rank as a table row: step time, where the time goes, throughput and warning flags."""

from __future__ import annotations

from rich.text import Text

from xfertop.analysis.steps import WindowStats, window_stats
from xfertop.model.jobs import JobState, RankState
from xfertop.ui import chart
from xfertop.ui.format import NA, human_bytes, ms, rate_gb_per_s

# Flags come before the throughput figures: on a narrow terminal they are what must stay in view.
COLUMNS = ("JOB", "RANK", "STATUS", "STEP", "HISTORY", "BREAKDOWN", "WAIT", "COPY", "COMPUTE", "GPU IDLE",
           "FLAGS", "SAMPLES/S", "H2D", "PINNED")
#: What an 80-column terminal keeps: where the time goes and the flags that say why.
COMPACT_COLUMNS = ("JOB", "RANK", "STATUS", "STEP", "BREAKDOWN", "WAIT", "GPU IDLE", "FLAGS")
#: Colours of the stacked bar and its legend, shared by the detail view. The first segment is the GPU
#: idle gap when the steps carry GPU timing, else the host's data wait: what the step lost to input.
SEGMENT_STYLES = {"input": "red", "copy": "yellow", "compute": "green"}
BAR_CELLS = 16
#: Recent steps in the HISTORY column: step time, scaled to the slowest of them.
HISTORY_CELLS = 16
#: Fewer DataLoader workers than this while waiting for data is worth a flag.
_FEW_WORKERS = 2
_WAIT_WORTH_FLAGGING = 0.2


class StatsByRank:
    """``window_stats`` of each rank, computed again only when the rank's steps changed: the jobs source
    hands over the very same steps tuple while a ring has no new steps (a stalled, finished or slow rank)."""

    def __init__(self) -> None:
        self._stats: dict[str, tuple[tuple, WindowStats | None]] = {}

    def of(self, rank: RankState) -> WindowStats | None:
        key = rank_key(rank)
        found = self._stats.get(key)
        if found is not None and found[0] is rank.steps:
            return found[1]
        stats = window_stats(rank.steps)
        self._stats[key] = (rank.steps, stats)
        return stats

    def keep_only(self, keys: set[str]) -> None:
        """Forget the ranks that are gone."""
        for key in self._stats.keys() - keys:
            del self._stats[key]


def breakdown_bar(stats: WindowStats | None, width: int = BAR_CELLS) -> Text:
    if stats is None:
        return Text("·" * width, style="dim")
    pieces = chart.stacked([(stats.input_share, SEGMENT_STYLES["input"]),
                            (stats.copy_share, SEGMENT_STYLES["copy"]),
                            (stats.compute_share, SEGMENT_STYLES["compute"])], width)
    return Text.assemble(*pieces)


def step_history(rank: RankState, cells: int = HISTORY_CELLS) -> Text:
    walls = [step.wall_ms for step in rank.steps[-cells:]]
    return Text(chart.spark(walls, max(walls, default=0.0), cells), style="cyan")


def rank_flags(rank: RankState, stats: WindowStats | None) -> list[str]:
    flags = []
    if stats is not None and stats.pageable_non_blocking_step_fraction:
        flags.append("pageable non_blocking")
    elif stats is not None and stats.pinned_step_fraction is not None and stats.pinned_step_fraction < 1:
        flags.append("pageable copies")
    workers = rank.dataloader_workers
    if (workers is not None and workers < _FEW_WORKERS and stats is not None
            and stats.data_wait_share >= _WAIT_WORTH_FLAGGING):
        flags.append(f"{workers} workers")
    if rank.reporter_disabled:
        flags.append("reporter off")
    return flags


def _share(value: float | None) -> str:
    return NA if value is None else f"{100 * value:.0f}%"


def _status(rank: RankState) -> Text:
    style = {"live": "green", "stalled": "bold red", "finished": "dim"}[rank.status]
    words = rank.status if rank.status != "stalled" else f"stalled {rank.heartbeat_age_s:.0f}s"
    return Text(words, style=style)


def rank_label(rank: RankState) -> str:
    if rank.rank is None:
        return "-"
    return f"{rank.rank}/{rank.world_size}" if rank.world_size else str(rank.rank)


def rank_cells(job: JobState, rank: RankState, stats: WindowStats | None) -> tuple[str | Text, ...]:
    """The row's cells, ``stats`` being ``window_stats(rank.steps)`` (``StatsByRank`` keeps them)."""
    flags = rank_flags(rank, stats)
    if stats is None:
        # Too few steps for a window yet: say so rather than show figures from a handful of steps.
        return (job.name, rank_label(rank), _status(rank), "warming up", step_history(rank),
                breakdown_bar(None), NA, NA, NA, NA, ", ".join(flags), NA, NA,
                human_bytes(rank.pinned_host_bytes))
    return (
        job.name,
        rank_label(rank),
        _status(rank),
        ms(stats.wall.p50_ms),
        step_history(rank),
        breakdown_bar(stats),
        _share(stats.data_wait_share),
        _share(stats.copy_share),
        _share(stats.compute_share),
        _share(stats.gpu_idle_share),
        Text(", ".join(flags), style="yellow") if flags else "",
        f"{stats.samples_per_s:.0f}",
        rate_gb_per_s(stats.h2d_bytes_per_s),
        human_bytes(rank.pinned_host_bytes),
    )


def rank_key(rank: RankState) -> str:
    return f"{rank.job_key}|{rank.pid}"
