"""The host source on real processes: a training-like parent with DataLoader-like workers, locked and
shared memory, a process that has exited, and a process of another user."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from xfertop.model.host import HostState, ProcessStats
from xfertop.sources.host import HostSource

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
    process = subprocess.Popen([sys.executable, "-c", TRAINER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True)
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
# the H200, docs/host-memory.md). It touches 4 MiB, says "ready", and touches 12 MiB on each stdin line.
CUDA_LIKE = r"""
import mmap, sys
with open(sys.argv[1], "r+b") as stand_in:
    control = mmap.mmap(stand_in.fileno(), 4096, flags=mmap.MAP_SHARED)
pinned = mmap.mmap(-1, 16 << 20, flags=mmap.MAP_SHARED)
pinned[:4 << 20:4096] = b"p" * ((4 << 20) // 4096)
print("ready", flush=True)
for line in sys.stdin:
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
            process = subprocess.Popen([sys.executable, "-c", CUDA_LIKE, stand_in], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, text=True)
            started.append(process)
            assert process.stdout is not None and process.stdout.readline() == "ready\n"
        return started[-count:]

    yield start
    for process in started:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)


def test_simulated_cuda_process_shared_anonymous_memory_is_its_cuda_host_alloc_figure(
        stand_in, cuda_like) -> None:
    [process] = cuda_like(1)
    source = HostSource(nvidia_control_device=stand_in)
    source.watch_pids([process.pid])
    stats = _watched(source.sample_once(), process.pid)
    assert stats.cuda_host_alloc_bytes == 4 * MIB, "the touched pages of the MAP_SHARED anonymous mapping"
    assert stats.cuda_host_alloc_age_s == 0.0
    assert stats.children == () and stats.error is None


def test_simulated_cuda_process_figure_is_reused_with_its_age_until_the_smaps_interval_passes(
        stand_in, cuda_like) -> None:
    [process] = cuda_like(1)
    source = HostSource(nvidia_control_device=stand_in, smaps_interval_s=2.0)
    source.watch_pids([process.pid])
    first = _watched(source.sample_once(), process.pid)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("grow\n")
    process.stdin.flush()
    assert process.stdout.readline() == "grown\n"
    cached = _watched(source.sample_once(), process.pid)
    time.sleep(2.0)
    fresh = _watched(source.sample_once(), process.pid)
    assert first.cuda_host_alloc_bytes == cached.cuda_host_alloc_bytes == 4 * MIB, "smaps not re-read yet"
    assert cached.cuda_host_alloc_age_s is not None and 0.0 < cached.cuda_host_alloc_age_s < 2.0
    assert fresh.cuda_host_alloc_bytes == 12 * MIB and fresh.cuda_host_alloc_age_s == 0.0


def test_simulated_cuda_processes_get_at_most_max_smaps_reads_per_sample_oldest_first(
        stand_in, cuda_like) -> None:
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
from xfertop.sources.host import HostSource
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
    run = subprocess.run([sys.executable, "-c", OTHER_USER_VIEW, str(os.getpid())], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    assert seen["uid"] == 65534
    # Linux lets anyone read /proc/<pid>/status and stat, so the figures come through; with hidepid the
    # process is invisible and the answer is an error sentence instead. Either way, no exception.
    assert (seen["error"] is None and seen["shmem"] is not None) or "process" in seen["error"]
    # maps and smaps are not world-readable: the cudaHostAlloc figure stays unknown, with a sentence.
    assert seen["cuda_host_alloc"] is None
    assert seen["error"] is not None and "memory maps of process" in seen["error"]
