"""The host source on real processes: a training-like parent with DataLoader-like workers, locked and
shared memory, a process that has exited, and a process of another user."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest

from crowded_core import crowded_core, spun
from xfertop.model.host import HostState, ProcessStats
from xfertop.sources.host import source as host
from xfertop.sources.host.cgroup_cpu import CgroupCpuReader, read_cpu_limit
from xfertop.sources.host.source import HostSource

MIB = 1 << 20

# A "training process": locks 1 MiB, touches 8 MiB of MAP_SHARED memory (what CUDA pinned memory looks
# like in /proc, measured on an H200), starts two workers, says "ready <mlock ok>" and waits for stdin.
TRAINER = r"""
import ctypes, mmap, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
locked = mmap.mmap(-1, 1 << 20, flags=mmap.MAP_PRIVATE)
locked[:] = b"l" * len(locked)
buf = ctypes.c_char.from_buffer(locked)
mlock_ok = libc.mlock(ctypes.c_void_p(ctypes.addressof(buf)), ctypes.c_size_t(1 << 20)) == 0
shared = mmap.mmap(-1, 8 << 20, flags=mmap.MAP_SHARED)
shared[::4096] = b"s" * (len(shared) // 4096)
worker_code = "import sys; print('ready', flush=True); sys.stdin.read()"
workers = [subprocess.Popen([sys.executable, "-c", worker_code], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True) for _ in range(2)]
for w in workers:
    w.stdout.readline()
print("ready", int(mlock_ok), flush=True)
sys.stdin.read()
for w in workers:
    w.stdin.close()
    w.wait()
"""


@pytest.fixture
def trainer() -> Iterator[tuple[subprocess.Popen[str], bool]]:
    process = subprocess.Popen(
        [sys.executable, "-c", TRAINER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    words = process.stdout.readline().split()
    assert words[0] == "ready", words
    yield process, words[1] == "1"
    assert process.stdin is not None
    process.stdin.close()
    process.wait(timeout=30)


def _watched(state: HostState, pid: int) -> ProcessStats:
    return next(p for p in state.processes if p.pid == pid)


def test_a_watched_process_shows_its_workers_cpu_memory_and_threads(trainer) -> None:
    process, _ = trainer
    source = HostSource()
    source.watch_pids([process.pid])
    first = _watched(source.sample_once(), process.pid)
    second = _watched(source.sample_once(), process.pid)

    assert first.cpu_percent is None, "no interval yet on the first sample"
    assert second.cpu_percent is not None and second.cpu_percent >= 0.0
    assert second.name.startswith("python") and second.error is None
    assert second.rss_bytes is not None and second.rss_bytes > 8 * MIB
    assert second.num_threads is not None and second.num_threads >= 1
    assert second.ppid == os.getpid()
    assert len(second.children) == 2
    assert all(child.ppid == process.pid and child.children == () for child in second.children)


def test_shared_memory_is_reported_as_shmem_and_pinned_stays_unknown(trainer) -> None:
    process, _ = trainer
    source = HostSource()
    source.watch_pids([process.pid])
    stats = _watched(source.sample_once(), process.pid)
    assert stats.shmem_rss_bytes is not None and stats.shmem_rss_bytes >= 8 * MIB
    assert stats.pinned_vm_bytes == 0
    # /proc cannot tell CUDA pinned memory from other shared memory: the host source does not guess.
    assert stats.pinned_bytes is None


def test_a_process_without_an_nvidiactl_mapping_gets_no_cuda_host_alloc_figure(trainer) -> None:
    """Its 8 MiB of MAP_SHARED memory is "/dev/zero (deleted)" too, but it is not a CUDA process."""
    process, _ = trainer
    assert "/dev/nvidiactl" not in Path(f"/proc/{process.pid}/maps").read_text()
    assert "/dev/zero (deleted)" in Path(f"/proc/{process.pid}/maps").read_text()
    source = HostSource()
    source.watch_pids([process.pid])
    stats = _watched(source.sample_once(), process.pid)
    assert stats.cuda_host_alloc_bytes is None and stats.cuda_host_alloc_age_s is None
    assert stats.error is None


# SIMULATED CUDA process, for machines without a GPU: it maps a stand-in file where a CUDA process maps
# /dev/nvidiactl (the test points HostSource's nvidia_control_device at that file), and holds MAP_SHARED
# anonymous memory, which Linux names "/dev/zero (deleted)" as it does cudaHostAlloc's buffers (measured on
# the H200, docs/host-memory.md). It touches 4 MiB, says "ready", and touches 12 MiB on a "grow" line. On
# a "batch" line it touches 1 MiB more of a memfd, as a DataLoader worker's batch in /dev/shm moves the
# process's RssShmem but not its cudaHostAlloc figure.
CUDA_LIKE = r"""
import mmap, os, sys
with open(sys.argv[1], "r+b") as stand_in:
    control = mmap.mmap(stand_in.fileno(), 4096, flags=mmap.MAP_SHARED)
pinned = mmap.mmap(-1, 16 << 20, flags=mmap.MAP_SHARED)
pinned[:4 << 20:4096] = b"p" * ((4 << 20) // 4096)
batches_fd = os.memfd_create("batches")
os.ftruncate(batches_fd, 64 << 20)
batches = mmap.mmap(batches_fd, 64 << 20, flags=mmap.MAP_SHARED)
touched = 0
print("ready", flush=True)
for line in sys.stdin:
    if line == "batch\n":
        batches[touched : touched + (1 << 20) : 4096] = b"b" * ((1 << 20) // 4096)
        touched += 1 << 20
        print("batched", flush=True)
    else:
        pinned[:12 << 20:4096] = b"p" * ((12 << 20) // 4096)
        print("grown", flush=True)
"""


@pytest.fixture
def stand_in(tmp_path: Path) -> str:
    path = (tmp_path / "nvidiactl-stand-in").resolve()
    path.write_bytes(bytes(4096))
    return str(path)


@pytest.fixture
def cuda_like(stand_in: str) -> Iterator[Callable[[int], list[subprocess.Popen[str]]]]:
    """Start CUDA-like processes with ``start(n)``; all are ended after the test."""
    started: list[subprocess.Popen[str]] = []

    def start(count: int) -> list[subprocess.Popen[str]]:
        for _ in range(count):
            process = subprocess.Popen(
                [sys.executable, "-c", CUDA_LIKE, stand_in],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            started.append(process)
            assert process.stdout is not None and process.stdout.readline() == "ready\n"
        return started[-count:]

    yield start
    for process in started:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)


def test_simulated_cuda_process_shared_anonymous_memory_is_its_cuda_host_alloc_figure(
    stand_in, cuda_like
) -> None:
    [process] = cuda_like(1)
    source = HostSource(nvidia_control_device=stand_in)
    source.watch_pids([process.pid])
    stats = _watched(source.sample_once(), process.pid)
    assert stats.cuda_host_alloc_bytes == 4 * MIB, "the touched pages of the MAP_SHARED anonymous mapping"
    assert stats.cuda_host_alloc_age_s == 0.0
    assert stats.children == () and stats.error is None


class ManualClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _grow(process: subprocess.Popen[str]) -> None:
    """Make the CUDA-like process touch 8 MiB more of its MAP_SHARED anonymous mapping (RssShmem moves)."""
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("grow\n")
    process.stdin.flush()
    assert process.stdout.readline() == "grown\n"


def _batch(process: subprocess.Popen[str]) -> None:
    """Make the CUDA-like process touch 1 MiB more of its memfd: RssShmem moves, its pinned figure not."""
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("batch\n")
    process.stdin.flush()
    assert process.stdout.readline() == "batched\n"


def test_simulated_cuda_process_whose_other_shared_memory_keeps_moving_is_re_read_less_and_less_often(
    stand_in, cuda_like
) -> None:
    """A DataLoader's workers hand batches over in shared memory: the rank's RssShmem moves at every
    sample while its pinned memory stays. Each read that finds the figure unchanged doubles the wait
    (2, 4, 8 s here, up to the max age); a changed figure brings the interval back."""
    [process] = cuda_like(1)
    clock = ManualClock()
    source = HostSource(
        nvidia_control_device=stand_in, smaps_interval_s=2.0, smaps_max_age_s=10.0, monotonic=clock
    )
    source.watch_pids([process.pid])
    read_at = []
    for _ in range(26):
        stats = _watched(source.sample_once(), process.pid)
        assert stats.cuda_host_alloc_bytes == 4 * MIB
        if stats.cuda_host_alloc_age_s == 0.0:
            read_at.append(clock.now - 1000.0)
        _batch(process)
        clock.now += 1.0
    assert read_at == [0.0, 2.0, 6.0, 14.0, 24.0], "waits of 2, 4 and 8 s, then the max age"
    _grow(process)
    for _ in range(10):  # the next read finds the figure changed
        if _watched(source.sample_once(), process.pid).cuda_host_alloc_bytes == 12 * MIB:
            break
        clock.now += 1.0
    clock.now += 2.0
    _batch(process)
    assert _watched(source.sample_once(), process.pid).cuda_host_alloc_age_s == 0.0, "2 s again"


def test_simulated_cuda_process_figure_is_reused_with_its_age_until_the_smaps_interval_passes(
    stand_in, cuda_like
) -> None:
    [process] = cuda_like(1)
    clock = ManualClock()
    source = HostSource(nvidia_control_device=stand_in, smaps_interval_s=2.0, monotonic=clock)
    source.watch_pids([process.pid])
    first = _watched(source.sample_once(), process.pid)
    _grow(process)
    clock.now += 1.5
    cached = _watched(source.sample_once(), process.pid)
    clock.now += 1.0
    fresh = _watched(source.sample_once(), process.pid)
    assert first.cuda_host_alloc_bytes == cached.cuda_host_alloc_bytes == 4 * MIB, "smaps not re-read yet"
    assert cached.cuda_host_alloc_age_s == 1.5
    assert cached.shmem_rss_bytes != first.shmem_rss_bytes, "the growth shows in RssShmem at once"
    assert fresh.cuda_host_alloc_bytes == 12 * MIB and fresh.cuda_host_alloc_age_s == 0.0


def test_simulated_cuda_process_whose_shared_memory_did_not_move_is_re_read_only_when_old(
    stand_in, cuda_like
) -> None:
    """smaps costs 6-24 ms for a torch process: while RssShmem stays, the last figure stands (with its
    age) until the max age; a move of RssShmem makes it due again after the interval."""
    [process] = cuda_like(1)
    clock = ManualClock()
    source = HostSource(
        nvidia_control_device=stand_in, smaps_interval_s=2.0, smaps_max_age_s=10.0, monotonic=clock
    )
    source.watch_pids([process.pid])
    assert _watched(source.sample_once(), process.pid).cuda_host_alloc_age_s == 0.0
    clock.now += 5.0  # past the interval, RssShmem unmoved: not re-read
    unmoved = _watched(source.sample_once(), process.pid)
    assert (unmoved.cuda_host_alloc_bytes, unmoved.cuda_host_alloc_age_s) == (4 * MIB, 5.0)
    clock.now += 5.0  # the max age: re-read all the same
    assert _watched(source.sample_once(), process.pid).cuda_host_alloc_age_s == 0.0
    _grow(process)
    clock.now += 1.0  # moved, but within the interval
    assert _watched(source.sample_once(), process.pid).cuda_host_alloc_bytes == 4 * MIB
    clock.now += 1.0  # moved, interval passed: re-read
    moved = _watched(source.sample_once(), process.pid)
    assert (moved.cuda_host_alloc_bytes, moved.cuda_host_alloc_age_s) == (12 * MIB, 0.0)


def test_simulated_cuda_processes_get_at_most_max_smaps_reads_per_sample_oldest_first(
    stand_in, cuda_like
) -> None:
    processes = cuda_like(3)
    pids = [p.pid for p in processes]
    source = HostSource(nvidia_control_device=stand_in, max_smaps_reads=1, smaps_interval_s=60.0)
    source.watch_pids(pids)
    known = []
    for _ in range(4):
        state = source.sample_once()
        known.append(sum(_watched(state, pid).cuda_host_alloc_bytes is not None for pid in pids))
    assert known == [1, 2, 3, 3], "one smaps per sample, never-read processes first, none due again in 60 s"
    assert all(_watched(state, pid).cuda_host_alloc_bytes == 4 * MIB for pid in pids)


def test_mlocked_memory_is_reported_as_locked(trainer) -> None:
    process, mlock_ok = trainer
    if not mlock_ok:
        pytest.skip("mlock is not permitted here (RLIMIT_MEMLOCK or no CAP_IPC_LOCK)")
    source = HostSource()
    source.watch_pids([process.pid])
    assert _watched(source.sample_once(), process.pid).locked_bytes == 1 * MIB


def test_host_totals_are_sane() -> None:
    source = HostSource()
    state = source.sample_once()
    assert len(state.cpu_per_core_percent) == os.cpu_count()
    assert 0.0 <= state.cpu_percent <= 100.0
    assert state.mem_total_bytes >= state.mem_used_bytes > 0
    assert state.mem_available_bytes > 0 and len(state.load_avg) == 3
    assert state.processes == ()


def test_a_process_that_exited_gives_none_fields_and_a_sentence() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    source = HostSource()
    source.watch_pids([gone.pid])
    stats = _watched(source.sample_once(), gone.pid)
    assert stats.error == f"process {gone.pid} has exited"
    assert stats.rss_bytes is None and stats.cpu_percent is None and stats.shmem_rss_bytes is None


def test_the_polling_thread_publishes_after_watch_pids_changes() -> None:
    source = HostSource(interval_s=60.0)
    source.watch_pids([os.getpid()])
    source.start()
    try:
        state = source.wait_for_sample(timeout_s=30.0)
    finally:
        source.stop()
    assert state is not None and [p.pid for p in state.processes] == [os.getpid()]


# Imports first, then drop to nobody: the interpreter and the venv may live where nobody cannot read.
OTHER_USER_VIEW = r"""
import json, os, sys
from xfertop.sources.host.source import HostSource
source = HostSource()
os.setgid(65534)
os.setuid(65534)
source.watch_pids([int(sys.argv[1])])
stats = source.sample_once().processes[0]
print(json.dumps({"uid": os.getuid(), "error": stats.error, "shmem": stats.shmem_rss_bytes,
                  "cuda_host_alloc": stats.cuda_host_alloc_bytes}))
"""


def test_another_users_process_never_raises() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to start a viewer as another user")
    run = subprocess.run(
        [sys.executable, "-c", OTHER_USER_VIEW, str(os.getpid())], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    assert seen["uid"] == 65534
    # Linux lets anyone read /proc/<pid>/status and stat, so the figures come through; with hidepid the
    # process is invisible and the answer is an error sentence instead. Either way, no exception.
    assert (seen["error"] is None and seen["shmem"] is not None) or "process" in seen["error"]
    # maps and smaps are not world-readable: the cudaHostAlloc figure stays unknown, with a sentence.
    assert seen["cuda_host_alloc"] is None
    assert seen["error"] is not None and "memory maps of process" in seen["error"]


# The host source reads /proc itself (stat, status, statm) where it used psutil: its figures must be the
# ones psutil gives for the same processes.


def test_process_figures_are_the_ones_psutil_gives(trainer) -> None:
    process, _ = trainer
    source = HostSource()
    source.watch_pids([process.pid])
    source.sample_once()
    stats = _watched(source.sample_once(), process.pid)
    for shown in (stats, *stats.children):
        expected = psutil.Process(shown.pid)
        with expected.oneshot():
            assert shown.name == expected.name() and shown.user == expected.username()
            assert shown.ppid == expected.ppid() and shown.num_threads == expected.num_threads()
            assert shown.rss_bytes == expected.memory_info().rss, "an idle process keeps its resident pages"
    assert stats.cpu_percent is not None and all(child.cpu_percent is not None for child in stats.children)


def test_a_name_the_kernel_cut_at_15_characters_is_taken_whole_from_the_command_line(tmp_path: Path) -> None:
    long_name = tmp_path / "a_python_with_a_long_name"
    long_name.symlink_to(sys.executable)
    code = "import sys; print('ready', flush=True); sys.stdin.read()"
    process = subprocess.Popen(
        [str(long_name), "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
        assert Path(f"/proc/{process.pid}/comm").read_text() == "a_python_with_a\n"
        source = HostSource()
        source.watch_pids([process.pid])
        stats = _watched(source.sample_once(), process.pid)
        assert stats.name == "a_python_with_a_long_name" == psutil.Process(process.pid).name()
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)


# A process whose second thread starts a worker: the kernel lists that worker under the thread's own
# children file. Prints "<worker pid> <thread id>".
THREAD_SPAWNER = r"""
import subprocess, sys, threading
found, started, done = [], threading.Event(), threading.Event()
def spawn():
    worker = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    found.extend([worker, threading.get_native_id()])
    started.set()
    done.wait()
    worker.stdin.close()
    worker.wait()
thread = threading.Thread(target=spawn)
thread.start()
started.wait()
print(found[0].pid, found[1], flush=True)
sys.stdin.read()
done.set()
thread.join()
"""


def test_a_worker_started_by_another_thread_is_found_and_a_thread_id_lists_no_workers() -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", THREAD_SPAWNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        worker, tid = map(int, process.stdout.readline().split())
        source = HostSource()
        source.watch_pids([process.pid, tid])
        state = source.sample_once()
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)
    assert [child.pid for child in _watched(state, process.pid).children] == [worker]
    # The walk over /proc/*/stat keyed children by process id only: a thread's id had none.
    assert _watched(state, tid).children == () and _watched(state, tid).error is None


def _copy_process(root: Path, pid: int) -> None:
    """stat, status and statm of a live process, and an empty task directory: no children files."""
    directory = root / str(pid)
    (directory / "task" / str(pid)).mkdir(parents=True)
    for name in ("stat", "status", "statm"):
        (directory / name).write_bytes(Path(f"/proc/{pid}/{name}").read_bytes())


def test_without_children_files_the_workers_come_from_the_stat_walk(trainer, tmp_path: Path) -> None:
    process, _ = trainer
    live_source = HostSource()
    live_source.watch_pids([process.pid])
    live = _watched(live_source.sample_once(), process.pid)
    for pid in (process.pid, *(child.pid for child in live.children)):
        _copy_process(tmp_path, pid)
    (tmp_path / "4242").mkdir()
    (tmp_path / "4242" / "stat").write_text("not a stat line\n")
    copied_source = HostSource(proc_root=tmp_path)
    copied_source.watch_pids([process.pid, 4242, 4343])
    state = copied_source.sample_once()
    copied = _watched(state, process.pid)
    assert [(c.pid, c.name, c.ppid) for c in copied.children] == [
        (c.pid, c.name, c.ppid) for c in live.children
    ]
    assert len(copied.children) == 2 and copied.name == live.name
    assert _watched(state, 4242).error == "cannot parse /proc/4242/stat"
    assert _watched(state, 4343).error == "process 4343 has exited"


def test_cpu_totals_from_one_read_of_proc_stat_are_psutils() -> None:
    before_total, before_cores = host._cpu_marks()
    psutil_total = host._cpu_mark(psutil.cpu_times()._asdict())
    psutil_cores = [host._cpu_mark(t._asdict()) for t in psutil.cpu_times(percpu=True)]
    after_total, after_cores = host._cpu_marks()
    # The counters only grow: psutil's reading lies between two of ours (to the float rounding of a sum
    # taken in another order: 16586.28 against 16586.27999999999 failed a CI run).
    eps = 1e-6
    assert before_total.total_s - eps <= psutil_total.total_s <= after_total.total_s + eps
    assert before_total.busy_s - eps <= psutil_total.busy_s <= after_total.busy_s + eps
    assert len(before_cores) == len(psutil_cores) == len(after_cores)
    for before, theirs, after in zip(before_cores, psutil_cores, after_cores, strict=True):
        assert before.total_s - eps <= theirs.total_s <= after.total_s + eps


def test_memory_totals_are_psutils_and_psutil_decides_the_odd_cases(monkeypatch) -> None:
    total, available, swap_total, swap_used = host._memory_totals()
    assert total == psutil.virtual_memory().total and 0 < available <= total
    assert swap_total == psutil.swap_memory().total and 0 <= swap_used <= swap_total
    stand_in = SimpleNamespace(total=7, available=3, used=1)
    monkeypatch.setattr(host.psutil, "virtual_memory", lambda: stand_in)
    monkeypatch.setattr(host.psutil, "swap_memory", lambda: stand_in)
    for meminfo, expected in (
        (
            b"MemTotal: 100 kB\nMemAvailable: 40 kB\nSwapTotal: 10 kB\nSwapFree: 4 kB\n",
            (102400, 40960, 10240, 6144),
        ),
        (b"MemTotal: 100 kB\nMemAvailable: 0 kB\nSwapTotal: 10 kB\nSwapFree: 10 kB\n", (7, 3, 10240, 0)),
        (b"MemTotal: 100 kB\nMemAvailable: 200 kB\n", (7, 3, 7, 1)),
        (b"MemTotal: 100 kB\nMemFree: 20 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n", (7, 3, 0, 0)),
    ):
        monkeypatch.setattr(host, "read_proc_file", lambda path, data=meminfo: data)
        assert host._memory_totals() == expected, meminfo


# A process whose one extra thread ends and another starts (the thread count stays 2), and the new thread
# starts a worker: the thread ids read at the first sample are stale. Prints "ready", then the worker's pid.
THREAD_SWAPPER = r"""
import subprocess, sys, threading
first_done = threading.Event()
first = threading.Thread(target=first_done.wait)
first.start()
print("ready", flush=True)
sys.stdin.readline()
first_done.set()
first.join()
found, started, done = [], threading.Event(), threading.Event()
def spawn():
    worker = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    found.append(worker)
    started.set()
    done.wait()
    worker.stdin.close()
    worker.wait()
second = threading.Thread(target=spawn)
second.start()
started.wait()
print(found[0].pid, flush=True)
sys.stdin.readline()
done.set()
second.join()
"""


def test_a_worker_of_a_thread_started_after_the_last_sample_is_found_at_the_same_thread_count() -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", THREAD_SWAPPER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None and process.stdin is not None
        assert process.stdout.readline() == "ready\n"
        source = HostSource()
        source.watch_pids([process.pid])
        before = _watched(source.sample_once(), process.pid)
        assert before.children == () and before.num_threads == 2
        process.stdin.write("go\n")
        process.stdin.flush()
        worker = int(process.stdout.readline())
        after = _watched(source.sample_once(), process.pid)
        assert after.num_threads == 2 and [child.pid for child in after.children] == [worker]
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)


def test_a_proc_record_longer_than_one_read_is_read_whole(tmp_path: Path) -> None:
    long = tmp_path / "record"
    long.write_bytes(bytes(range(256)) * 1000)
    assert host._read_whole_record(str(long)) == long.read_bytes()
    status = host._read_whole_record(f"/proc/{os.getpid()}/status")
    assert status.startswith(b"Name:") and b"\nThreads:\t" in status and status.endswith(b"\n")


def test_a_worker_confined_to_one_core_shows_its_allowed_cpus() -> None:
    code = (
        "import os, subprocess, sys\n"
        "worker = subprocess.Popen([sys.executable, '-c', "
        "'import os, sys; os.sched_setaffinity(0, {0}); print(1, flush=True); sys.stdin.read()'], "
        "stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)\n"
        "worker.stdout.readline(); print('ready', flush=True); sys.stdin.read(); worker.stdin.close(); "
        "worker.wait()\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        source = HostSource()
        source.watch_pids([process.pid])
        stats = _watched(source.sample_once(), process.pid)
        assert stats.cpus_allowed == tuple(sorted(os.sched_getaffinity(0)))
        (worker,) = stats.children
        assert worker.cpus_allowed == (0,)
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)


def test_a_watched_process_carries_its_cgroups_cpu_quota_and_throttled_share(tmp_path: Path) -> None:
    """The host source asks its cgroup reader about each watched process (here a tree in tmp_path that
    puts this process in a 2-core cgroup v2) and publishes quota, file, throttled share and the share of
    the quota used."""
    pid = os.getpid()
    (tmp_path / "proc" / str(pid)).mkdir(parents=True)
    (tmp_path / "proc" / str(pid) / "cgroup").write_text("0::/train.scope\n")
    (tmp_path / "proc" / "self").mkdir()
    (tmp_path / "proc" / "self" / "mountinfo").write_text(
        "35 24 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
    )
    scope = tmp_path / "sys/fs/cgroup/train.scope"
    scope.mkdir(parents=True)
    (scope / "cpu.max").write_text("200000 100000\n")
    (scope / "cpu.stat").write_text("usage_usec 0\nnr_periods 10\nnr_throttled 0\n")
    clock = itertools.count()  # one second per call
    source = HostSource(
        cgroup_cpu=CgroupCpuReader(tmp_path / "proc", tmp_path, window_s=0.0),
        monotonic=lambda: float(next(clock)),
    )
    source.watch_pids([pid])
    first = _watched(source.sample_once(), pid)
    assert first.cpu_quota_cores == 2.0 and first.cpu_quota_file == str(scope / "cpu.max")
    assert first.cpu_throttled_share is None, "one reading: no share yet"
    (scope / "cpu.stat").write_text("usage_usec 1000000\nnr_periods 20\nnr_throttled 4\n")
    second = _watched(source.sample_once(), pid)
    assert second.cpu_throttled_share == 0.4
    assert second.cpu_quota_used_share == 0.5, "1 s of CPU in the 1 s between samples, of a 2-core quota"


def test_a_process_without_a_cpu_quota_has_none_and_so_do_its_workers(trainer) -> None:
    process, _ = trainer
    source = HostSource()
    source.watch_pids([process.pid])
    stats = _watched(source.sample_once(), process.pid)
    limit = read_cpu_limit(process.pid)
    assert stats.cpu_quota_cores == (limit.quota_cores if limit else None)
    assert all(child.cpu_quota_cores is None for child in stats.children), "workers share the rank's"


_SPINNER = """
import sys, threading
def spin():
    while True:
        pass
if sys.argv[1] == "other":
    threading.Thread(target=spin, daemon=True).start()
    print("ready", flush=True)
    sys.stdin.read()
else:
    print("ready", flush=True)
    spin()
"""


@pytest.mark.parametrize("busy", ["main", "other"])
def test_the_main_threads_own_cpu_is_told_apart_from_the_processs(busy: str) -> None:
    # The loader's work that the main process does itself (a Sampler, unpacking batches) shows as its main
    # thread's CPU while the loop waits (advice.main_process_loads): another thread's CPU must not count.
    process = subprocess.Popen(
        [sys.executable, "-c", _SPINNER, busy], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        source = HostSource()
        source.watch_pids([process.pid])
        assert _watched(source.sample_once(), process.pid).main_thread_cpu_percent is None, "no interval yet"
        spinning = psutil.Process(process.pid)
        start = sum(spinning.cpu_times()[:2])
        while sum(spinning.cpu_times()[:2]) - start < 0.3:  # CPU accrues: an interval to measure
            time.sleep(0.02)
        stats = _watched(source.sample_once(), process.pid)
        assert stats.cpu_percent is not None and stats.cpu_percent > 20.0, stats
        main = stats.main_thread_cpu_percent
        assert main is not None, stats
        if busy == "main":
            assert main >= 0.8 * stats.cpu_percent, stats
        else:
            assert main <= 0.2 * stats.cpu_percent, stats
    finally:
        process.kill()
        process.wait(timeout=30)


def test_a_childs_time_waiting_for_a_core_is_told_from_its_time_asleep() -> None:
    # Workers that want a core they cannot get (other jobs hold it) use as little CPU as workers that wait on
    # storage; the scheduler's run delay tells them apart (advice.workers_mostly_wait).
    with crowded_core() as crowd:
        source = HostSource()
        source.watch_pids([crowd.parent])
        first = {kid.pid: kid for kid in _watched(source.sample_once(), crowd.parent).children}
        assert first[crowd.sleeper].run_delay_percent is None, "no interval yet"
        spun(crowd.spinners[0])
        kids = {kid.pid: kid for kid in _watched(source.sample_once(), crowd.parent).children}
        for pid in crowd.spinners:
            cpu, delay = kids[pid].cpu_percent, kids[pid].run_delay_percent
            assert cpu is not None and delay is not None, kids[pid]
            assert cpu + delay >= 80.0, kids[pid]  # always ready to run: on the core or waiting for it
            assert delay >= 20.0, kids[pid]  # two of them on one core: each waits while the other runs
        cpu, delay = kids[crowd.sleeper].cpu_percent, kids[crowd.sleeper].run_delay_percent
        assert cpu is not None and delay is not None and cpu + delay < 20.0, kids[crowd.sleeper]
        assert _watched(source.sample_once(), crowd.parent).run_delay_percent is None, "children only"
