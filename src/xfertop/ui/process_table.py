"""GPU and training processes: pid, user, GPU memory, CPU, RSS, DataLoader workers, pinned memory, command.

Rows are keyed by pid and diffed, so a refresh touches only the cells that changed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import ClassVar

from textual.binding import Binding, BindingType

from xfertop.model.host import ProcessStats
from xfertop.ui.format import NA, gb, human_bytes
from xfertop.ui.line_table import Column, LineTable
from xfertop.ui.view_state import ViewState

#: When the columns do not fit, the highest ``drop_order`` goes first; COMMAND takes what is left.
TABLE_COLUMNS = (
    Column("GPU"),
    Column("PID"),
    Column("USER", drop_order=3),
    Column("GPU MEM", drop_order=1),
    Column("CPU%"),
    Column("RSS", drop_order=2),
    Column("WORKERS", drop_order=4),
    Column("PINNED", drop_order=5),
    Column("COMMAND", fill=True, min_width=7),
)
COLUMNS = tuple(column.name for column in TABLE_COLUMNS)


@dataclass
class _Row:
    gpus: list[str]
    user: str | None = None
    gpu_mem_bytes: int | None = None
    command: str | None = None
    pinned_bytes: int | None = None
    workers: int | None = None
    #: A training rank whose process ended: no figures of a live process to show.
    ended: bool = False


def _add_gpu_processes(view: ViewState, rows: dict[int, _Row]) -> None:
    for gpu in view.gpu.gpus if view.gpu else ():
        for proc in gpu.processes:
            row = rows.setdefault(proc.pid, _Row(gpus=[]))
            row.gpus.append(str(gpu.index))
            row.user = row.user or proc.user
            row.command = row.command or proc.command
            if proc.gpu_memory_bytes is not None:
                row.gpu_mem_bytes = (row.gpu_mem_bytes or 0) + proc.gpu_memory_bytes


def _add_job_ranks(view: ViewState, rows: dict[int, _Row]) -> None:
    for job in view.jobs.jobs if view.jobs else ():
        for rank in job.ranks:
            if rank.status == "finished" and rank.pid not in rows:
                continue  # an ended rank is no process any more: the jobs pane says how it ended
            row = rows.setdefault(rank.pid, _Row(gpus=[]))
            # The script and its arguments, not the interpreter's path NVML names the process by.
            row.command = command_text(rank.argv) or row.command
            row.pinned_bytes = rank.pinned_host_bytes
            row.workers = rank.dataloader_workers


def command_text(argv: tuple[str, ...]) -> str:
    """The command as a person typed it: "python3 train.py --epochs 3", not the interpreter's full path
    and the script's (a ring records ``sys.executable`` and ``sys.argv``)."""
    if not argv:
        return ""
    words = list(argv)
    if os.path.basename(words[0]).startswith("python"):
        words[0] = os.path.basename(words[0])
        if len(words) > 1 and words[1].endswith(".py"):
            words[1] = os.path.basename(words[1])
    return " ".join(words)


#: Marks a PINNED figure read from /proc/<pid>/smaps rather than reported by the process itself.
PROC_SUFFIX = " proc"


def _pinned(row: _Row, proc: ProcessStats | None) -> str:
    """The reporter's pinned figure when the process is a training rank; else the cudaHostAlloc memory the
    host source read from /proc ("1.0G proc": cudaHostRegister'ed memory is not in it); else the process's
    resident shared memory as an upper bound ("≤1.0G"). docs/host-memory.md says why each."""
    if row.pinned_bytes is not None:
        return human_bytes(row.pinned_bytes)
    if proc is not None and proc.pinned_bytes is not None:
        return human_bytes(proc.pinned_bytes)
    if proc is not None and proc.cuda_host_alloc_bytes is not None:
        return human_bytes(proc.cuda_host_alloc_bytes) + PROC_SUFFIX
    if proc is not None and proc.shmem_rss_bytes:
        return "≤" + human_bytes(proc.shmem_rss_bytes)
    return NA


def pinned_text(view: ViewState, pid: int, reported_bytes: int | None) -> str:
    """PINNED as the process table shows it for ``pid`` (the job detail says the same)."""
    stats = next((p for p in view.host.processes if p.pid == pid), None) if view.host else None
    return _pinned(_Row(gpus=[], pinned_bytes=reported_bytes), stats)


def process_rows(view: ViewState) -> list[tuple[str, tuple[str, ...]]]:
    """(row key, cells) for every GPU process and every training rank, GPU processes first."""
    rows: dict[int, _Row] = {}
    _add_gpu_processes(view, rows)
    _add_job_ranks(view, rows)
    stats: dict[int, ProcessStats] = {p.pid: p for p in view.host.processes} if view.host else {}
    result: list[tuple[str, tuple[str, ...]]] = []
    for pid, row in rows.items():
        proc = stats.get(pid)
        cpu = f"{proc.cpu_percent:.0f}" if proc and proc.cpu_percent is not None else NA
        workers = row.workers if row.workers is not None else (len(proc.children) if proc else None)
        cells = (
            ",".join(row.gpus) or "-",
            str(pid),
            row.user or (proc.user if proc else None) or NA,
            # Decimal GB, as in the GPU panes, so the two can be compared at a glance.
            NA if row.gpu_mem_bytes is None else f"{gb(row.gpu_mem_bytes)}G",
            cpu,
            human_bytes(proc.rss_bytes if proc else None),
            NA if workers is None else str(workers),
            _pinned(row, proc),
            row.command or (proc.name if proc else NA),
        )
        result.append((str(pid), cells))
    return result


class ProcessTable(LineTable):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "sample_stacks", "Stacks", tooltip="Sample its Python stacks with py-spy")
    ]

    def __init__(self) -> None:
        super().__init__(TABLE_COLUMNS, id="processes")
        self.border_title = "processes"

    def show(self, view: ViewState) -> None:
        self.set_rows(process_rows(view))

    def action_sample_stacks(self) -> None:
        """py-spy on the process under the cursor (the attach screen)."""
        key = self.cursor_key
        if key is None:
            self.notify("no process to sample: the table is empty.", severity="warning")
            return
        self.app.sample_stacks(int(key))  # type: ignore[attr-defined]
