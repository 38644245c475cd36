"""Stack samples of a running process, as py-spy reports them (sources.stacks produces these).

Frames are innermost first, like ``py-spy dump --json``. ``name`` is what py-spy prints: the code
object's qualified name on Python 3.11+ (``_BaseDataLoaderIter.__next__``), the bare name before.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Frame:
    name: str
    #: The path py-spy gives: full in ``dump --json``, shortened (``torch/utils/data/dataloader.py``) in raw.
    filename: str
    #: 0 when py-spy had no line number.
    line: int

    @property
    def function(self) -> str:
        """The bare function name (``__next__`` for ``_BaseDataLoaderIter.__next__``)."""
        return self.name.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class ThreadStack:
    """One distinct stack of one thread, seen ``count`` times in a window."""

    pid: int
    #: OS thread id; equals ``pid`` for the main thread on Linux.
    tid: int
    thread_name: str | None
    frames: tuple[Frame, ...]
    count: int = 1
    #: Process ids from the attached root down to ``pid`` (workers sit under their parent).
    process_path: tuple[int, ...] = ()
    #: ``dump --json`` says whether the thread was running; raw windows do not (None).
    active: bool | None = None

    @property
    def is_main_thread(self) -> bool:
        return self.tid == self.pid


@dataclass(frozen=True)
class ChildPlacement:
    """One child process of the attached one (a DataLoader worker, or anything else it started)."""

    pid: int
    #: The cores it may run on (its CPU affinity).
    allowed_cpus: tuple[int, ...]
    #: Its CPU use over the window, percent of one core; None when it did not live the whole window.
    cpu_percent: float | None = None
    #: Its main thread's time ready to run but waiting for a CPU over the window (/proc/<pid>/schedstat),
    #: percent of one core; None as cpu_percent is, or where schedstat is not there.
    run_delay_percent: float | None = None


@dataclass(frozen=True)
class WindowPlacement:
    """Where the attached process's children may run, read from /proc around one window: the
    evidence that advice about more DataLoader workers rests on."""

    #: The descendants alive at the window's end (workers sit under a forkserver with that method).
    children: tuple[ChildPlacement, ...]
    #: Every core's busy percent over the window (anyone's work), by core number.
    cores_busy_percent: tuple[float, ...]
    #: The attached process still ran at the window's end.
    root_alive: bool = True
    #: The CPU quota of its cgroup in cores (its workers share it), the file that sets it, and the
    #: share of the window's scheduler periods in which the cgroup was throttled; None: none or unknown.
    cpu_quota_cores: float | None = None
    cpu_quota_file: str | None = None
    cpu_throttled_share: float | None = None
    #: The cgroup's CPU time over the window against what the quota allowed (1.0: all); None: unknown.
    cpu_quota_used_share: float | None = None
    #: The attached process, or else a process under it (a launcher's training child), maps
    #: /dev/nvidiactl (a CUDA process); None when its maps could not be read.
    uses_cuda: bool | None = None


@dataclass(frozen=True)
class StackWindow:
    """Everything one sampling window saw of one attached process and its children."""

    root_pid: int
    started_at: float
    duration_s: float
    rate_hz: int
    stacks: tuple[ThreadStack, ...]
    #: pid -> command line, for every process seen in the window.
    commands: dict[int, str] = field(default_factory=dict)
    #: Set when the window could not be taken; a sentence saying what to do.
    error: str | None = None
    #: py-spy's count of samples it failed to read (partial stacks under --nonblocking).
    sample_errors: int = 0
    #: The children's placement around the window; None when it could not be read.
    placement: WindowPlacement | None = None


@dataclass(frozen=True)
class AttachTarget:
    """A process to sample, with what its environment says about its place in a job."""

    pid: int
    rank: int | None = None
    local_rank: int | None = None
    world_size: int | None = None
    #: TORCHELASTIC_RUN_ID, else MASTER_ADDR:MASTER_PORT, else "pid:<pid>".
    job_key: str = ""
    command: str = ""


@dataclass(frozen=True)
class StacksState:
    """The latest window of every attached rank of one job."""

    timestamp: float
    targets: tuple[AttachTarget, ...]
    windows: tuple[StackWindow, ...]
    error: str | None = None
