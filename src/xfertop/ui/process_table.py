"""GPU and training processes: pid, user, GPU memory, CPU, RSS, DataLoader workers, pinned memory, command.

Rows are keyed by pid and diffed, so a refresh touches only the cells that changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.widgets import DataTable

from xfertop.model.host import ProcessStats
from xfertop.ui.format import NA, gb, human_bytes
from xfertop.ui.table_rows import CellCachedTable, update_row
from xfertop.ui.view_state import ViewState

COLUMNS = ("GPU", "PID", "USER", "GPU MEM", "CPU%", "RSS", "WORKERS", "PINNED", "COMMAND")
#: Columns that widen to a new value (the others keep the width their first values gave them).
_GROWS = frozenset({"COMMAND"})


@dataclass
class _Row:
    gpus: list[str]
    user: str | None = None
    gpu_mem_bytes: int | None = None
    command: str | None = None
    pinned_bytes: int | None = None
    workers: int | None = None


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
            row = rows.setdefault(rank.pid, _Row(gpus=[]))
            row.command = row.command or " ".join(rank.argv)
            row.pinned_bytes = rank.pinned_host_bytes
            row.workers = rank.dataloader_workers


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


def selected_row_key(table: DataTable) -> str | None:
    """The key of the row under the cursor, or None for an empty table."""
    if not table.row_count:
        return None
    return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value


class ProcessTable(CellCachedTable):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "sample_stacks", "Stacks", tooltip="Sample its Python stacks with py-spy")
    ]

    def __init__(self) -> None:
        super().__init__(id="processes", cursor_type="row", zebra_stripes=False)
        self.border_title = "processes"

    def on_mount(self) -> None:
        for name in COLUMNS:
            self.add_column(name, key=name)

    def show(self, view: ViewState) -> None:
        wanted = process_rows(view)
        keys = {key for key, _ in wanted}
        for row_key in list(self.rows):
            if row_key.value not in keys:
                self.remove_row(row_key)
        for key, cells in wanted:
            if key in self.rows:
                update_row(self, key, COLUMNS, cells, width_columns=_GROWS)
            else:
                self.add_row(*cells, key=key)

    def action_sample_stacks(self) -> None:
        """py-spy on the process under the cursor (the attach screen)."""
        key = selected_row_key(self)
        if key is None:
            self.notify("no process to sample: the table is empty.", severity="warning")
            return
        self.app.sample_stacks(int(key))  # type: ignore[attr-defined]
