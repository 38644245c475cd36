"""On a real GPU: the step clock's measured GPU idle gap against known GPU work and waits, the host's parts
under `xfertop run` (the model's calls, backward, optimizer steps, .item() of a CUDA loss), pageable copies.

Run on the GPU machine: ``XFERTOP_RESULTS_DIR=$OUT pytest -m gpu tests/gpu/test_reporter_gpu.py``.
The same stories run here against a fake CUDA in tests/reporter/test_gpu_clock_with_fake_cuda.py.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

import xfertop
import xfertop.reporter as reporter
from gpu_results import write_result
from ring_test_tools import child_env, ranks, run_under_xfertop
from xfertop.analysis.verdict import job_verdict
from xfertop.model.jobs import StepRecord
from xfertop.reporter._clock import StepClock
from xfertop.reporter._identity import current_identity
from xfertop.reporter._ring_writer import RingWriter
from xfertop.sources.jobs.ring_reader import RingReader
from xfertop.sources.jobs.source import JobsSource

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)


@pytest.fixture
def clock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> StepClock:
    fresh = StepClock(lambda: RingWriter(str(tmp_path / "rings"), current_identity()))
    monkeypatch.setattr(reporter, "_clock", fresh)
    return fresh


def _cycles_per_ms() -> float:
    """torch.cuda._sleep spins a known number of GPU cycles: calibrate it against CUDA events."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1_000_000)
    torch.cuda.synchronize()
    start.record()
    torch.cuda._sleep(50_000_000)
    end.record()
    torch.cuda.synchronize()
    return 50_000_000 / start.elapsed_time(end)


def gpu_busy_ms(cycles_per_ms: float, duration_ms: float) -> None:
    torch.cuda._sleep(int(cycles_per_ms * duration_ms))


def _steps(clock: StepClock) -> list[StepRecord]:
    assert clock.writer is not None
    reader = RingReader(clock.writer.path)
    reader.poll()
    steps = list(reader.steps)
    reader.close()
    return steps


def _batches(count: int, wait_s: float, host_batch: torch.Tensor):  # type: ignore[no-untyped-def]
    for _ in range(count):
        time.sleep(wait_s)
        yield host_batch


def _for_seconds(seconds: float, batch: torch.Tensor):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        yield batch


def _within(measured: float, truth: float, share: float, floor_ms: float = 0.3) -> bool:
    return abs(measured - truth) <= max(share * truth, floor_ms)


def test_cuda_events_complete_as_the_fake_cuda_says() -> None:
    # What tests/fakes/fake_cuda.py models (tests/reporter/test_gpu_clock_with_fake_cuda.py checks it).
    cycles_per_ms = _cycles_per_ms()
    torch.cuda.synchronize()
    assert torch.cuda.Event(enable_timing=True).query()  # never recorded
    idle = torch.cuda.Event(enable_timing=True)
    idle.record()
    time.sleep(0.001)
    assert idle.query()  # on an empty stream: complete as soon as recorded
    gpu_busy_ms(cycles_per_ms, 200.0)
    behind = torch.cuda.Event(enable_timing=True)
    behind.record()
    assert not behind.query()  # not until the stream reaches it
    with pytest.raises(RuntimeError, match="Both events must be completed"):
        idle.elapsed_time(behind)
    side = torch.cuda.Stream()
    on_side = torch.cuda.Event(enable_timing=True)
    on_side.record(side)
    time.sleep(0.001)
    assert on_side.query()  # another stream's work does not hold it back
    torch.cuda.synchronize()
    assert behind.query() and _within(idle.elapsed_time(behind), 200.0, 0.05, floor_ms=2.0)


def test_the_gap_is_the_wait_the_gpu_felt(clock: StepClock) -> None:
    # Every step's gap: the first CUDA calls after each 20 ms sleep run cold, so the policy may sample.
    clock.gap.sampling.enabled = False
    cycles_per_ms = _cycles_per_ms()
    batch = torch.ones(1024, 1024).pin_memory()
    for host in xfertop.watch(_batches(30, 0.020, batch)):
        device_batch = xfertop.to_device(host, "cuda", non_blocking=True)
        gpu_busy_ms(cycles_per_ms, 10.0)
        device_batch.sum().item()  # the loop waits for the GPU at the step's end, like a logged loss
    torch.cuda.synchronize()
    clock.resolve_pending()
    steps = [s for s in _steps(clock)[3:] if s.gpu_gap_ms is not None]
    assert len(steps) >= 20
    gap = statistics.median(s.gpu_gap_ms for s in steps)  # type: ignore[misc]
    wait = statistics.median(s.data_wait_ms for s in steps)
    write_result(
        "reporter_gpu_known_work", {"gpu_gap_ms": gap, "data_wait_ms": wait, "expected_gap_ms": wait}
    )
    # The GPU had drained at the step's end (the .item()): it sat idle through all of the wait.
    assert _within(gap, wait, 0.05), (gap, wait)
    # xfertop.watch watches copies and syncs as `xfertop run` does: the copy is the step's first work, and
    # the .item() its sync, blocked while the GPU ran the 10 ms queued before it. No nn.Module ran: no
    # model end, so nothing is the loop's own work after the model.
    assert all(s.partitioned and s.synced and not s.loop_post_ms for s in steps)
    sync = statistics.median(s.sync_ms for s in steps)
    assert _within(sync, 10.0, 0.2, floor_ms=1.5), sync
    assert all(s.pinned and not s.pageable_non_blocking for s in steps)
    assert all(s.h2d_bytes == 4 * 2**20 for s in steps)
    assert clock.errors == 0


def test_queued_gpu_work_hides_the_data_wait(clock: StepClock) -> None:
    clock.gap.sampling.enabled = (
        False  # 5 ms steps may be sampled (every 2nd); this story checks every step's gap
    )
    cycles_per_ms = _cycles_per_ms()
    batch = torch.ones(256, 256).pin_memory()
    for host in xfertop.watch(_batches(30, 0.005, batch)):
        xfertop.to_device(host, "cuda", non_blocking=True)
        gpu_busy_ms(cycles_per_ms, 20.0)  # never synchronised: the GPU runs behind the host
    torch.cuda.synchronize()
    clock.resolve_pending()
    steps = [s for s in _steps(clock)[5:25] if s.gpu_gap_ms is not None]
    write_result(
        "reporter_gpu_hidden_wait", {"gpu_gap_ms": [s.gpu_gap_ms for s in steps], "steps": len(steps)}
    )
    # Still busy with the steps before at each step's first work: a gap of 0, and no event to wait for.
    assert len(steps) == 20 and all(s.gpu_gap_ms == 0.0 for s in steps), [s.gpu_gap_ms for s in steps]


def test_pageable_non_blocking_copies_are_flagged(clock: StepClock) -> None:
    pageable = torch.ones(64, 2**20 // 4 * 4)  # 256 MiB
    pinned = pageable.pin_memory()
    for index in xfertop.watch(range(8)):
        source = pageable if index % 2 == 0 else pinned
        xfertop.to_device(source, "cuda", non_blocking=True)
        torch.cuda.synchronize()
    clock.before_next()
    steps = _steps(clock)
    pageable_steps = [s for s in steps if s.pageable_non_blocking]
    pinned_steps = [s for s in steps if s.pinned]
    assert len(pageable_steps) == 4 and len(pinned_steps) == 4
    pageable_cpu = statistics.median(s.copy_cpu_ms for s in pageable_steps)
    pinned_cpu = statistics.median(s.copy_cpu_ms for s in pinned_steps)
    write_result(
        "reporter_gpu_pageable", {"pageable_copy_cpu_ms": pageable_cpu, "pinned_copy_cpu_ms": pinned_cpu}
    )
    # From pageable memory non_blocking silently turns synchronous: the call lasts the whole copy.
    assert pageable_cpu > 10 * pinned_cpu


def test_pinned_host_memory_reaches_the_viewer(clock: StepClock) -> None:
    pinned = torch.ones(16, 2**20).pin_memory()  # 64 MiB from the caching host allocator
    deadline = time.monotonic() + 1.5
    for _ in xfertop.watch(iter(lambda: time.monotonic() < deadline, False)):
        xfertop.to_device(pinned[0], "cuda", non_blocking=True)
        time.sleep(0.01)
    assert clock.writer is not None
    state = JobsSource(ring_dir=clock.writer.dir_path).sample_once()
    rank = state.jobs[0].ranks[0]
    write_result("reporter_gpu_pinned", {"pinned_host_bytes": rank.pinned_host_bytes})
    assert rank.pinned_host_bytes is not None and rank.pinned_host_bytes >= 64 * 2**20
    assert rank.device.startswith("cuda")


def test_a_loop_that_copies_by_itself_gets_gpu_timing_within_a_second(clock: StepClock) -> None:
    cycles_per_ms = _cycles_per_ms()
    batch = torch.ones(256, 256).pin_memory()
    for host in xfertop.watch(_for_seconds(2.0, batch)):
        host.to("cuda", non_blocking=True)  # not through to_device: the reporter must find the GPU itself
        gpu_busy_ms(cycles_per_ms, 2.0)
        torch.cuda.synchronize()
    clock.resolve_pending()
    timed = [s for s in _steps(clock) if s.gpu_gap_ms is not None]
    gap = statistics.median(s.gpu_gap_ms for s in timed) if timed else None  # type: ignore[misc]
    write_result(
        "reporter_gpu_found_device",
        {"steps_with_gpu_timing": len(timed), "device": clock.device, "gpu_gap_ms": gap},
    )
    assert clock.device.startswith("cuda") and len(timed) > 10
    # Between the synchronize at one step's end and the next step's batch the GPU waits only for the loop.
    assert gap is not None and gap < 0.5, gap


#: Under `xfertop run`: 10 ms of augmenting on the CPU before the copy, a model on the GPU (about 5 ms of
#: kernels, their GPU time printed: on the H200 of session 34 a sleep calibrated on a GPU still ramping its
#: clock ran ~4 ms), loss.item(), 3 ms of logging after it. The GPU idles through the augmenting, the
#: logging and the wait; the host's parts say which is which.
XFERTOP_RUN_PARTS_JOB = """
import statistics
import time
import torch
from torch.utils.data import DataLoader, TensorDataset

def spin(seconds):
    began = time.perf_counter()
    while time.perf_counter() - began < seconds:
        pass

start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
for _ in range(3):  # the last of three: the GPU's clock has ramped up by then
    start.record(); torch.cuda._sleep(50_000_000); end.record(); torch.cuda.synchronize()
cycles_per_ms = 50_000_000 / start.elapsed_time(end)
model = torch.nn.Linear(64, 64).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(TensorDataset(torch.ones(80 * 8, 64)), batch_size=8, pin_memory=True)
kernel_ms = []
for (batch,) in loader:
    spin(0.010)  # augmenting on the CPU
    batch = batch.to("cuda", non_blocking=True)
    loss = model(batch).square().mean()
    start.record(); torch.cuda._sleep(int(5 * cycles_per_ms)); end.record()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    loss.item()  # the loop waits for the GPU
    kernel_ms.append(start.elapsed_time(end))  # done: the .item() drained the stream
    spin(0.003)  # logging
print("done; hooks on the model:", len(model._forward_pre_hooks) + len(model._forward_hooks))
print("kernel_ms", statistics.median(kernel_ms))
"""


def test_xfertop_run_splits_a_cuda_step_and_measures_the_gpus_idle_around_it(tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text(XFERTOP_RUN_PARTS_JOB)
    rings = tmp_path / "rings"
    command = [sys.executable, "-m", "xfertop.cli.run", "--no-summary", "--", sys.executable, str(script)]
    env = child_env(rings, XFERTOP_GPU_SAMPLING="off")  # every step's gap, whatever its calls cost
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    # The copy comes before the model's call and a backward after it: the model's hooks came off (from
    # about step 20), and the parts below, most of them measured without, stay right.
    done, kernel = result.stdout.splitlines()
    assert result.returncode == 0 and done == "done; hooks on the model: 0", result.stderr
    kernel_ms = float(kernel.removeprefix("kernel_ms "))
    [rank] = ranks(JobsSource(ring_dir=str(rings)))
    steps = [s for s in rank.steps[5:] if s.gpu_gap_ms is not None]
    medians = {
        name: statistics.median(getattr(s, name) for s in steps)
        for name in ("data_wait_ms", "loop_pre_ms", "copy_cpu_ms", "model_ms", "sync_ms", "loop_post_ms")
    }
    gap = statistics.median(s.gpu_gap_ms for s in steps)  # type: ignore[misc]
    write_result(
        "reporter_gpu_xfertop_run_parts",
        {**medians, "gpu_gap_ms": gap, "kernel_ms": kernel_ms, "steps": len(steps)},
    )
    assert len(steps) >= 40 and all(s.partitioned and s.synced for s in steps)
    assert _within(medians["loop_pre_ms"], 10.0, 0.1), medians
    assert _within(medians["loop_post_ms"], 3.0, 0.2, floor_ms=0.5), medians
    # The .item() waits for the kernels' time less the host's model calls issued after them (~1.5 ms).
    assert 0.4 * kernel_ms <= medians["sync_ms"] <= kernel_ms, (kernel_ms, medians)
    # The GPU drained at the .item(): it idled through the logging, the wait and the augmenting.
    truth = medians["loop_post_ms"] + medians["data_wait_ms"] + medians["loop_pre_ms"]
    assert _within(gap, truth, 0.1), (gap, medians)


VALIDATION_PASS_JOB = """
import io
import sys
import time
import torch
from torch.utils.data import DataLoader, Dataset, TensorDataset

WAIT_S, KERNEL_MS = float(sys.argv[1]), float(sys.argv[2])
MODE = sys.argv[3] if len(sys.argv) > 3 else ""
AHEAD = MODE in ("ahead", "save")  # no loss.item(): the host runs ahead, 6 ms of kernels queued a step

class Slow(Dataset):  # the validation loader waits WAIT_S a batch, on the main thread (num_workers=0)
    def __len__(self):
        return 4
    def __getitem__(self, index):
        time.sleep(WAIT_S)
        return torch.ones(64)

start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
for _ in range(3):
    start.record(); torch.cuda._sleep(50_000_000); end.record(); torch.cuda.synchronize()
cycles_per_ms = 50_000_000 / start.elapsed_time(end)
model = torch.nn.Linear(64, 64).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
train = DataLoader(TensorDataset(torch.ones(8 * 60, 64)), batch_size=8)
val = DataLoader(Slow(), batch_size=1)
for step, (batch,) in enumerate(train, start=1):
    loss = model(batch.to("cuda")).square().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if AHEAD:
        torch.cuda._sleep(int(6 * cycles_per_ms))
    else:
        loss.item()
    if step % 10 == 0 and MODE == "save":  # a checkpoint instead: the weights copied to the host
        torch.save(model.state_dict(), io.BytesIO())
    elif step % 10 == 0:  # validation: each batch queues KERNEL_MS of kernels
        correct = torch.zeros((), device="cuda")
        with torch.no_grad():
            for (v,) in val:
                out = model(v.to("cuda"))
                torch.cuda._sleep(int(KERNEL_MS * cycles_per_ms))
                correct += out.sum()
        float(correct)
print("done")
"""


@pytest.mark.parametrize(("wait_ms", "kernel_ms"), [(0.5, 20.0), (15.0, 5.0)])
def test_a_validation_pass_s_kernels_are_not_the_next_steps_gap(
    tmp_path: Path, wait_ms: float, kernel_ms: float
) -> None:
    # Session 41's k: the gap of the step after a pass was timed across the pass's kernels, 16% idle at
    # 99% NVML busy. Busy pass (0.5 ms waits, 20 ms kernels a batch): the gap is the few ms around it;
    # idle pass (15 ms waits, 5 ms kernels): the GPU drains in each wait, about 15 + 3 x 10 ms.
    script = tmp_path / "job.py"
    script.write_text(VALIDATION_PASS_JOB)
    rings = tmp_path / "rings"
    command = [sys.executable, "-m", "xfertop.cli.run", "--no-summary", "--", sys.executable, str(script)]
    command += [str(wait_ms / 1000), str(kernel_ms)]
    env = child_env(rings, XFERTOP_GPU_SAMPLING="off")
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout == "done\n", result.stderr
    [rank] = ranks(JobsSource(ring_dir=str(rings)))
    by_step = {s.step: s for s in rank.steps}
    passes = [s for s in rank.steps if s.nested_pass]
    after = [by_step[s.step + 1] for s in passes if s.step + 1 in by_step]
    gaps = [s.gpu_gap_ms for s in after]
    pass_ms = [s.wall_ms for s in passes]
    write_result(
        f"reporter_gpu_validation_pass_wait{wait_ms:g}_kernel{kernel_ms:g}",
        {"gaps_after_pass_ms": gaps, "pass_step_wall_ms": pass_ms, "passes": len(passes)},
    )
    assert len(passes) == 6 and len(after) == 5 and None not in gaps, (len(passes), gaps)
    kernels = 4 * kernel_ms
    for gap, wall in zip(gaps, pass_ms, strict=False):
        assert gap is not None and gap < wall - 0.8 * kernels, (gaps, pass_ms)
    if wait_ms < 1.0:
        assert max(gaps) < 10.0, gaps
    else:
        assert all(30.0 <= gap <= 70.0 for gap in gaps), gaps


@pytest.mark.parametrize("mode", ["ahead", "synced", "save"])
def test_periodic_work_is_timed_on_the_gpus_clock(tmp_path: Path, mode: str) -> None:
    # Session 45's k on an H100: a host 25 steps ahead of the GPU, whose pass's float(correct) drained
    # their kernels, read its passes at 46% of the time. Ahead (10 steps x 6 ms queued when a pass begins,
    # 4 x 3 ms of loading overlapping them): the pass costs its 4 x 1 ms of kernels and little idle, while
    # its host wall holds the drain. Synced (loss.item() every step): its cost is its host time. Save
    # (ahead, torch.save of the weights every 10 steps): the save costs well under a millisecond on the
    # GPU's clock, its host wall the drain.
    ahead = mode != "synced"
    script = tmp_path / "job.py"
    script.write_text(VALIDATION_PASS_JOB)
    rings = tmp_path / "rings"
    command = [sys.executable, "-m", "xfertop.cli.run", "--no-summary", "--", sys.executable, str(script)]
    command += ["0.003", "1.0", *([mode] if ahead else [])]
    result = subprocess.run(command, env=child_env(rings), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout == "done\n", result.stderr
    [rank] = ranks(JobsSource(ring_dir=str(rings)))
    held = [s for s in rank.steps if (s.checkpoint if mode == "save" else s.nested_pass)]
    typical = statistics.median(s.wall_ms for s in rank.steps)
    timed = [s.periodic_gpu_ms for s in held]
    beyond = [s.wall_ms - typical for s in held]
    write_result(
        f"reporter_gpu_periodic_timed_{mode}",
        {"periodic_gpu_ms": timed, "wall_beyond_typical_ms": beyond, "typical_ms": typical},
    )
    assert len(held) == 6 and None not in timed, (len(held), timed)
    # The first pass also loads its kernels (CUDA loads a module at its first launch): on an H100 it read
    # 26.4 ms on the GPU's clock against 11.2-11.8 ms for the next five (session 47). The rest are judged.
    for gpu_ms, host_ms in list(zip(timed, beyond, strict=True))[1:]:
        assert gpu_ms is not None
        if mode == "ahead":
            # The host's wall also holds the queued training work the pass waited for: on an H100 the GPU's
            # clock read 0.65-0.66 of it (11.2-11.9 ms against 17.1-18.0, sessions 47 and 48); a pass timed
            # on the host's clock instead would read it all.
            assert 3.0 <= gpu_ms <= 20.0 and gpu_ms < 0.8 * host_ms, (timed, beyond)
        elif mode == "save":
            assert gpu_ms <= 5.0 and gpu_ms < 0.5 * host_ms, (timed, beyond)
        else:
            assert abs(gpu_ms - host_ms) <= 0.3 * host_ms + 1.0, (timed, beyond)


XFERTOP_RUN_CUDA_JOB = """
import time
import torch
from torch.utils.data import DataLoader, TensorDataset

loader = DataLoader(TensorDataset(torch.ones(4000, 64)), batch_size=8, pin_memory=True)
deadline = time.monotonic() + 2.5
while time.monotonic() < deadline:
    for (batch,) in loader:
        batch.to("cuda", non_blocking=True).mul_(2)
        torch.cuda.synchronize()
        if time.monotonic() > deadline:
            break
"""


def test_xfertop_run_times_a_cuda_job_without_code_change(tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text(XFERTOP_RUN_CUDA_JOB)
    for copy_timing in (False, True):  # --no-copy-timing, then the default
        rings = tmp_path / f"rings{int(copy_timing)}"
        flags = [] if copy_timing else ["--no-copy-timing"]
        command = [sys.executable, "-m", "xfertop.cli.run", *flags, "--", sys.executable, str(script)]
        result = subprocess.run(command, env=child_env(rings), capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        [rank] = ranks(JobsSource(ring_dir=str(rings)))
        timed = [s for s in rank.steps if s.gpu_gap_ms is not None]
        write_result(
            f"reporter_gpu_xfertop_run{'_copy_timing' if copy_timing else ''}",
            {
                "steps": len(rank.steps),
                "steps_with_gpu_timing": len(timed),
                "pinned_steps": sum(s.pinned for s in rank.steps),
                "synced_steps": sum(s.synced for s in rank.steps),
            },
        )
        assert len(timed) > 10 and rank.device.startswith("cuda")
        if copy_timing:
            assert sum(s.pinned and s.h2d_bytes == 8 * 64 * 4 for s in rank.steps) > 10
            # The copy is each step's first work; torch.cuda.synchronize is a sync.
            assert sum(s.partitioned and s.synced for s in rank.steps) > 10
        else:  # --no-copy-timing watches neither copies nor the model's calls nor syncs
            assert not any(s.partitioned or s.synced for s in rank.steps)


# Session 28's once-a-second tick on CUDA: debugging switches (the CUDA ones count only on a GPU) and a busy
# Python thread beside the loop, read while the job trains; the job's output unchanged.
SWITCHES_AND_BUSY_THREAD_JOB = """
import os, threading, time
import torch
from torch.utils.data import DataLoader, TensorDataset
from xfertop.sources.jobs.source import JobsSource

def seen():  # the job's own ring shows both (the reporter reads them once a second, at a step's end)
    jobs = JobsSource(ring_dir=os.environ["XFERTOP_DIR"]).sample().jobs
    return any(rank.busy_thread and rank.debug_switches for job in jobs for rank in job.ranks)

history = [{"step": i, "loss": 0.1 * i} for i in range(20_000)]

def metrics():
    while True:
        level = 0.0
        for record in history:
            level = 0.9 * level + 0.1 * record["loss"]
        time.sleep(0.0005)

torch.autograd.set_detect_anomaly(True)
threading.Thread(target=metrics, daemon=True, name="metrics").start()
model = torch.nn.Linear(64, 1).cuda()
optimizer = torch.optim.SGD(model.parameters(), 0.1)
loader = DataLoader(TensorDataset(torch.randn(1_000_000, 64)), batch_size=32, pin_memory=True)
started = time.monotonic()
for step, (batch,) in enumerate(loader):
    loss = model(batch.cuda(non_blocking=True)).sum()
    loss.backward()
    optimizer.step()
    loss.item()
    if step % 20 == 0 and seen():
        break
    assert time.monotonic() - started < 60, "the ring never showed the switches and the thread"
print("done")
"""


def test_switches_and_a_busy_thread_on_a_cuda_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")
    result, (rank,) = run_under_xfertop(tmp_path, SWITCHES_AND_BUSY_THREAD_JOB, summary=True)
    write_result(
        "reporter_gpu_switches_and_busy_thread",
        {"switches": list(rank.debug_switches), "thread": rank.busy_thread, "share": rank.busy_thread_share},
    )
    assert result.stdout == "done\n" and rank.device.startswith("cuda")
    assert rank.debug_switches == ("anomaly_detection", "cuda_launch_blocking")
    assert rank.busy_thread == "metrics" and rank.busy_thread_share >= 0.3
    advice = job_verdict([rank]).advice
    assert advice[0].startswith("Autograd anomaly detection is on"), advice
    assert advice[1].startswith("CUDA_LAUNCH_BLOCKING=1 is set"), advice
    assert any(line.startswith('A Python thread of the job\'s own ("metrics")') for line in advice), advice
    summary = result.stderr[result.stderr.index("xfertop run: ") :]
    assert "CUDA_LAUNCH_BLOCKING=1 is set" in summary, summary


EMPTY_CACHE_JOB = """
import torch
from torch.utils.data import DataLoader, TensorDataset

model = torch.nn.Linear(256, 256).cuda()
optimizer = torch.optim.SGD(model.parameters(), 0.1)
loader = DataLoader(TensorDataset(torch.randn(20_000, 256)), batch_size=16, pin_memory=True)
for step, (batch,) in enumerate(loader):
    model(batch.cuda(non_blocking=True)).square().mean().backward()
    optimizer.step()
    torch.cuda.empty_cache()  # "to avoid fragmentation", every step
print("done")
"""


def test_empty_cache_every_step_on_a_cuda_job_leads_the_advice(tmp_path: Path) -> None:
    result, (rank,) = run_under_xfertop(tmp_path, EMPTY_CACHE_JOB)
    switches = list(rank.debug_switches)
    write_result("reporter_gpu_empty_cache", {"switches": switches, "steps": len(rank.steps)})
    assert result.stdout == "done\n" and rank.device.startswith("cuda")
    assert "empty_cache_every_step" in rank.debug_switches, rank.debug_switches
    advice = job_verdict([rank]).advice
    assert advice[0].startswith("torch.cuda.empty_cache() runs every step or nearly"), advice
