"""GPU processes joined with the host: the owner and command are read once per process, never shown for
another process on the same pid, and a process that ends shows as it always did. Real processes here;
only NVML is faked."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from fakes.fake_pynvml import FakeGpu, FakePynvml
from xfertop.model.gpu import GpuProcess
from xfertop.sources.gpu import GpuSource
from xfertop.sources.gpu_facts import HostProcesses
from xfertop.sources.nvml_api import NvmlApi
from xfertop.wire import process_start_ticks

SLEEPER = "import sys, time; time.sleep(600)"
NS_LAST_PID = "/proc/sys/kernel/ns_last_pid"


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for child in started:
        child.kill()
        child.wait()


@pytest.fixture
def sources() -> Iterator[list[GpuSource]]:
    made: list[GpuSource] = []
    yield made
    for source in made:
        source.stop()


def start(children: list[subprocess.Popen[bytes]], *argv: str, **kwargs: object) -> subprocess.Popen[bytes]:
    child = subprocess.Popen(argv, **kwargs)  # type: ignore[call-overload]
    children.append(child)
    return child


def gpu_listing(*pids: int) -> list[SimpleNamespace]:
    return [SimpleNamespace(pid=pid, usedGpuMemory=2**30) for pid in pids]


def make_source(sources: list[GpuSource], gpu: FakeGpu,
                host_processes: HostProcesses | None = None) -> GpuSource:
    source = GpuSource(api=NvmlApi(FakePynvml([gpu])), first_window_s=0, host_processes=host_processes)
    sources.append(source)
    return source


def listed(source: GpuSource) -> dict[int, GpuProcess]:
    return {process.pid: process for process in source.sample_once().gpus[0].processes}


def start_on_pid(children: list[subprocess.Popen[bytes]], pid: int, not_at_ticks: int,
                 *argv: str) -> subprocess.Popen[bytes]:
    """A new process on ``pid`` (free again), by telling the kernel which pid it handed out last, that
    started on another clock tick than ``not_at_ticks``: a process NVML listed lived longer than a tick."""
    for _ in range(1000):
        try:
            with open(NS_LAST_PID, "w") as last_pid:
                last_pid.write(str(pid - 1))
        except OSError as exc:
            pytest.skip(f"cannot choose the next pid here ({NS_LAST_PID}: {exc.strerror})")
        child = start(children, *argv)
        if child.pid == pid and process_start_ticks(pid) != not_at_ticks:
            return child
        child.kill()  # another process took the pid, or the clock has not ticked yet: again
        child.wait()
    pytest.skip(f"no new process on pid {pid} after 1000 tries")


def test_a_pid_reused_by_a_new_process_shows_the_new_command_not_the_old(
        sources: list[GpuSource], children: list[subprocess.Popen[bytes]]) -> None:
    old = start(children, sys.executable, "-c", SLEEPER, "--old-run")
    gpu = FakeGpu(0, processes=gpu_listing(old.pid))
    source = make_source(sources, gpu)
    assert listed(source)[old.pid].command.endswith("--old-run")
    old_ticks = process_start_ticks(old.pid)
    old.kill()
    old.wait()
    # Same pid and the same name ("python"), a later start: between two samples NVML lists the pid again.
    new = start_on_pid(children, old.pid, old_ticks, sys.executable, "-c", SLEEPER, "--new-run")
    process = listed(source)[new.pid]
    assert process.command is not None and process.command.endswith("--new-run")
    assert process.user is not None


def test_a_process_that_execs_another_program_shows_the_new_command(
        sources: list[GpuSource], children: list[subprocess.Popen[bytes]]) -> None:
    # Same pid, same start time, another program. The write end of the pipe closes when exec succeeds.
    exec_done, write_end = os.pipe()
    child = start(children, sys.executable, "-c",
                  "import os, sys; os.set_inheritable(int(sys.argv[1]), False); sys.stdin.readline(); "
                  "os.execvp('sleep', ['sleep', '600'])", str(write_end),
                  pass_fds=(write_end,), stdin=subprocess.PIPE)
    os.close(write_end)
    source = make_source(sources, FakeGpu(0, processes=gpu_listing(child.pid)))
    assert "execvp" in listed(source)[child.pid].command
    child.stdin.write(b"go\n")
    child.stdin.flush()
    assert os.read(exec_done, 1) == b""
    os.close(exec_done)
    assert listed(source)[child.pid].command == "sleep 600"


def test_a_process_that_ends_while_still_listed_loses_its_command_then_its_owner(
        sources: list[GpuSource], children: list[subprocess.Popen[bytes]]) -> None:
    child = start(children, sys.executable, "-c", SLEEPER)
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


def test_a_pid_no_longer_listed_is_forgotten(sources: list[GpuSource],
                                             children: list[subprocess.Popen[bytes]]) -> None:
    child = start(children, "sleep", "600")
    gpu = FakeGpu(0, processes=gpu_listing(os.getpid(), child.pid))
    known = HostProcesses()
    source = make_source(sources, gpu, known)
    assert set(listed(source)) == {os.getpid(), child.pid}
    assert os.getpid() in known and child.pid in known
    gpu.processes = gpu_listing(os.getpid())
    assert set(listed(source)) == {os.getpid()}
    assert os.getpid() in known and child.pid not in known


def test_the_gpu_memory_stays_live_while_the_host_facts_are_kept(
        children: list[subprocess.Popen[bytes]]) -> None:
    child = start(children, "sleep", "600")
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
