"""GPU processes joined with the host: the owner and command are read once per process, never shown for
another process on the same pid, and a process that ends shows as it always did. Real processes here;
only NVML is faked."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from fakes.fake_pynvml import FakeGpu, FakePynvml
from xfertop.model.gpu import GpuProcess
from xfertop.sources.gpu.gpu_facts import HostProcesses
from xfertop.sources.gpu.nvml_api import NvmlApi
from xfertop.sources.gpu.source import GpuSource
from xfertop.wire import process_start_ticks

#: Says "ready" once its program runs: until then its command line may still be empty.
SLEEPER = "import time; print('ready', flush=True); time.sleep(600)"
#: Waits for a line on stdin, then runs its argument (a script) in the same process.
EXEC_AGAIN = (
    "import os, sys; print('waiting', flush=True); sys.stdin.readline(); "
    "os.execv(sys.executable, [sys.executable, '-c', sys.argv[1], '--after-exec'])"
)
#: Runs a program without address randomisation: its arguments lie where they lay last time.
SAME_ADDRESSES = ("setarch", "-R")
NS_LAST_PID = "/proc/sys/kernel/ns_last_pid"


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for child in started:
        child.kill()
        child.wait()


def start(children: list[subprocess.Popen[bytes]], *argv: str, **kwargs: object) -> subprocess.Popen[bytes]:
    child = subprocess.Popen(argv, **kwargs)  # type: ignore[call-overload]
    children.append(child)
    return child


def start_python(
    children: list[subprocess.Popen[bytes]], *arguments: str, launcher: tuple[str, ...] = ()
) -> subprocess.Popen[bytes]:
    """A sleeping Python that has started (its program runs, its arguments are in place)."""
    child = start(children, *launcher, sys.executable, "-c", SLEEPER, *arguments, stdout=subprocess.PIPE)
    assert child.stdout is not None and child.stdout.readline() == b"ready\n"
    return child


def gpu_listing(*pids: int) -> list[SimpleNamespace]:
    return [SimpleNamespace(pid=pid, usedGpuMemory=2**30) for pid in pids]


def make_source(
    sources: list[GpuSource], gpu: FakeGpu, host_processes: HostProcesses | None = None
) -> GpuSource:
    source = GpuSource(api=NvmlApi(FakePynvml([gpu])), first_window_s=0, host_processes=host_processes)
    sources.append(source)
    return source


def listed(source: GpuSource) -> dict[int, GpuProcess]:
    return {process.pid: process for process in source.sample_once().gpus[0].processes}


def start_on_pid(
    children: list[subprocess.Popen[bytes]], pid: int, not_at_ticks: int, *arguments: str
) -> subprocess.Popen[bytes]:
    """A new process on ``pid`` (free again), by telling the kernel which pid it handed out last, that
    started on another clock tick than ``not_at_ticks``: a process NVML listed lived longer than a tick."""
    for _ in range(1000):
        try:
            with open(NS_LAST_PID, "w") as last_pid:
                last_pid.write(str(pid - 1))
        except OSError as exc:
            pytest.skip(f"cannot choose the next pid here ({NS_LAST_PID}: {exc.strerror})")
        child = start_python(children, *arguments, launcher=SAME_ADDRESSES)
        if child.pid == pid and process_start_ticks(pid) != not_at_ticks:
            return child
        child.kill()  # another process took the pid, or the clock has not ticked yet: again
        child.wait()
    pytest.skip(f"no new process on pid {pid} after 1000 tries")


def test_a_pid_reused_by_a_new_process_shows_the_new_command_not_the_old(
    sources: list[GpuSource], children: list[subprocess.Popen[bytes]]
) -> None:
    if shutil.which(SAME_ADDRESSES[0]) is None:
        pytest.skip(f"{SAME_ADDRESSES[0]} (util-linux) is not installed")
    old = start_python(children, "--old-run", launcher=SAME_ADDRESSES)
    gpu = FakeGpu(0, processes=gpu_listing(old.pid))
    source = make_source(sources, gpu)
    assert listed(source)[old.pid].command.endswith("--old-run")
    old_ticks = process_start_ticks(old.pid)
    old.kill()
    old.wait()
    # Same pid, name ("python") and argument addresses (no randomisation, arguments as long), a later
    # start: between two samples NVML lists the pid again.
    new = start_on_pid(children, old.pid, old_ticks, "--new-run")
    process = listed(source)[new.pid]
    assert process.command is not None and process.command.endswith("--new-run")
    assert process.user is not None


def test_a_process_that_execs_its_own_program_again_shows_the_new_command(
    sources: list[GpuSource], children: list[subprocess.Popen[bytes]]
) -> None:
    # Same pid, same start time, same name ("python"): only the arguments differ.
    child = start(
        children, sys.executable, "-c", EXEC_AGAIN, SLEEPER, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert child.stdin is not None and child.stdout is not None
    assert child.stdout.readline() == b"waiting\n"
    source = make_source(sources, FakeGpu(0, processes=gpu_listing(child.pid)))
    assert listed(source)[child.pid].command.endswith(SLEEPER)
    child.stdin.write(b"go\n")
    child.stdin.flush()
    assert child.stdout.readline() == b"ready\n"  # SLEEPER runs in place of EXEC_AGAIN
    assert listed(source)[child.pid].command.endswith("--after-exec")


def test_a_process_that_ends_while_still_listed_loses_its_command_then_its_owner(
    sources: list[GpuSource], children: list[subprocess.Popen[bytes]]
) -> None:
    child = start_python(children)
    source = make_source(sources, FakeGpu(0, processes=gpu_listing(child.pid)))
    alive = listed(source)[child.pid]
    assert alive.user and alive.command
    child.kill()
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # a zombie now: ended, not yet reaped
    zombie = listed(source)[child.pid]
    assert (zombie.user, zombie.command) == (alive.user, None)  # psutil has no command line for it
    child.wait()
    gone = listed(source)[child.pid]  # NVML may list a pid a little after its end
    assert (gone.pid, gone.user, gone.command, gone.gpu_memory_bytes) == (child.pid, None, None, 2**30)


def test_a_pid_no_longer_listed_is_forgotten(
    sources: list[GpuSource], children: list[subprocess.Popen[bytes]]
) -> None:
    child = start_python(children)
    gpu = FakeGpu(0, processes=gpu_listing(os.getpid(), child.pid))
    known = HostProcesses()
    source = make_source(sources, gpu, known)
    assert set(listed(source)) == {os.getpid(), child.pid}
    assert os.getpid() in known and child.pid in known
    gpu.processes = gpu_listing(os.getpid())
    assert set(listed(source)) == {os.getpid()}
    assert os.getpid() in known and child.pid not in known


def test_the_gpu_memory_stays_live_while_the_host_facts_are_kept(
    children: list[subprocess.Popen[bytes]],
) -> None:
    child = start_python(children)
    known = HostProcesses()
    first = known.join(child.pid, 2**30)
    assert (first.user, first.command) != (None, None) and child.pid in known
    assert known.join(child.pid, 2**30) is first  # nothing changed: nothing read or built again
    grown = known.join(child.pid, 3 * 2**30)
    assert (grown.gpu_memory_bytes, grown.user, grown.command) == (3 * 2**30, first.user, first.command)
    assert known.join(child.pid, None).gpu_memory_bytes is None


def test_a_pid_that_no_process_holds_is_not_kept() -> None:
    vanished = 2**22 + 17  # above the default pid_max: no such process
    known = HostProcesses()
    assert known.join(vanished, None) == GpuProcess(pid=vanished, gpu_memory_bytes=None)
    assert vanished not in known
