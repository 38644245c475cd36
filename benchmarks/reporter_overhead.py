"""Reporter overhead: the same loop with and without the step clock, side by side in one run.

Reports the host time the reporter adds per step (ns) for: ``watch()``, ``watch()`` + ``to_device()``,
``with step():`` (the step clock alone: ``watch(instrument=False)``, which leaves torch alone; by
default ``watch()`` times copies and watches the model as ``xfertop run`` does, whose rows below give
that cost); on CPU and, when there is one, on CUDA (the GPU clock samples: see docs/reporter.md).
Then the same loops on CPU against the fake CUDA of tests/fakes with the H200's per-call host costs
(busy-waits: record 2.43 us, query 1.43 us, elapsed_time 1.5 us), GPU sampling on and off: a prediction
of the CUDA rows made on a CPU machine. Then ``as_run_*``: the watched loop with copy timing's ``.to()``
wrapper on, as `xfertop run` times a step, beside ``plain`` in one process (issue 20's <= 10 us a step
with copy timing on), its batches from ``itertools.repeat`` and from a real DataLoader, between whose
steps the reporter's code runs cold (see ``as_run_loops``). Then ``run_hooks_in_one_process``: a
DataLoader loop timed, `xfertop run`'s own hooks put on in the same process, the loop timed again: the
figure to hold to issue 20's 10 us (the side-by-side rows read about half of it on the CPU VM, session
40). Then the cost of ``xfertop run --no-copy-timing`` (automatic DataLoader wrapping) and ``xfertop run``
(copy timing on, the default) against the same script run directly, one process each (these move by tens
of us between processes).
Each CUDA or fake row also reports the sampling: ``gpu_every`` (k), ``gpu_timed_fraction`` and
``gpu_cost_ns`` (the host time a timed step spends in CUDA calls, as the clock measured it). Writes
reporter_overhead.json to OUT_DIR.

    python benchmarks/reporter_overhead.py OUT_DIR            # about a minute
    python benchmarks/reporter_overhead.py OUT_DIR --quick    # a few seconds
    python benchmarks/reporter_overhead.py OUT_DIR --cores 4-7  # every process on four cores (cores.py)
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import torch
from cores import add_cores_argument, pin
from torch.utils.data import DataLoader, TensorDataset

import xfertop
import xfertop.reporter
from xfertop.reporter._timed_copies import install_copy_timing

Loop = Callable[[int], None]
REPO = Path(__file__).resolve().parent.parent


def loops(device: torch.device, batch: torch.Tensor) -> dict[str, Loop]:
    """Loop bodies: each moves the batch to ``device`` and queues a little work, ``steps`` times."""
    copy_target = device if device.type == "cuda" else torch.device("meta")
    synchronize = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)

    def batches(steps: int) -> Iterable[torch.Tensor]:
        return itertools.repeat(batch, steps)

    def work(moved: torch.Tensor) -> None:
        if device.type == "cuda":
            moved.mul_(1.0001)

    def plain(steps: int) -> None:
        for host in batches(steps):
            work(host.to(copy_target, non_blocking=True))
        synchronize()

    def watched(steps: int) -> None:
        for host in xfertop.watch(batches(steps), instrument=False):
            work(host.to(copy_target, non_blocking=True))
        synchronize()

    def watched_to_device(steps: int) -> None:
        for host in xfertop.watch(batches(steps), instrument=False):
            work(xfertop.to_device(host, copy_target, non_blocking=True))
        synchronize()

    def step_blocks(steps: int) -> None:
        for host in batches(steps):
            with xfertop.step():
                work(host.to(copy_target, non_blocking=True))
        synchronize()

    return {"plain": plain, "watch": watched, "watch+to_device": watched_to_device, "step()": step_blocks}


@contextlib.contextmanager
def _copy_timing_on() -> Iterator[None]:
    """Copy timing's wrappers on Tensor.to/.cuda for one loop, as `xfertop run` puts them on for a whole
    process; torch's own methods back after it, so that ``plain`` in the same rounds runs torch's."""
    originals = torch.Tensor.to, torch.Tensor.cuda
    install_copy_timing(torch)
    try:
        yield
    finally:
        torch.Tensor.to, torch.Tensor.cuda = originals


def as_run_loops(device: torch.device, batch: torch.Tensor, dataloader: bool) -> dict[str, Loop]:
    """``plain`` beside the loop as `xfertop run` times it: watched, each ``.to()`` through copy timing's
    wrapper, the copy the step's first work (partitioning on, as run's model watch sets it; the loop has
    no model, backward or sync for its other wrappers to see), in one process, side by side (the
    subprocess rows of `xfertop run` move by tens of us between processes).

    With ``dataloader`` the batches come from a real DataLoader (num_workers=0) instead of a list: the
    reporter's code then runs between ~100 us of the DataLoader's own Python, and runs cold. On the CPU VM
    the same Python cost 2-4x there what it costs in a tight loop (docs/measurements/cpu-2026-12-04-s24/),
    so this is the figure a job sees."""
    copy_target = device if device.type == "cuda" else torch.device("meta")
    synchronize = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    xfertop.reporter.partitioning_installed()  # for the rest of this process: run's sections come after
    rows = 4096
    source: Iterable[Any] = (
        DataLoader(TensorDataset(batch.cpu().repeat(rows, 1)), batch_size=batch.shape[0])
        if dataloader
        else [(batch,)] * rows
    )

    def run_steps(iterable: Iterable[Any], steps: int) -> None:
        done = 0
        while done < steps:  # passes over the source, each a new iteration (an epoch)
            for (host,) in iterable:
                host.to(copy_target, non_blocking=True).add_(1.0)
                done += 1
                if done == steps:
                    break
        synchronize()

    def plain(steps: int) -> None:
        run_steps(source, steps)

    def watched_copies_timed(steps: int) -> None:
        with _copy_timing_on():
            run_steps(xfertop.watch(source, instrument=False), steps)

    return {"plain": plain, "watch+copy timing (as run)": watched_copies_timed}


def _clock_counters() -> tuple[int, int]:
    clock = xfertop.reporter._clock
    return (0, 0) if clock is None else (clock.steps_written, clock.gap.timed_steps)


def side_by_side(variants: dict[str, Loop], steps: int, rounds: int, fake: Any = None) -> dict[str, Any]:
    """Interleaved rounds (drift hits every variant alike); per variant, the median added ns per step.

    With ``fake`` (a FakeCuda with a cost model), also the modelled host ns of its CUDA calls per step.
    """
    per_round: dict[str, list[float]] = {name: [] for name in variants}
    counted: dict[str, list[int]] = {name: [0, 0, 0] for name in variants}  # steps, timed, modelled ns
    for loop in variants.values():
        loop(min(steps, 2000))  # warm-up: ring creation, CUDA events, caches
    for _ in range(rounds):
        for name, loop in variants.items():
            written, timed = _clock_counters()
            modelled = _modelled_ns(fake) if fake is not None else 0
            began = time.perf_counter_ns()
            loop(steps)
            per_round[name].append((time.perf_counter_ns() - began) / steps)
            written_after, timed_after = _clock_counters()
            counted[name][0] += written_after - written
            counted[name][1] += timed_after - timed
            counted[name][2] += (_modelled_ns(fake) - modelled) if fake is not None else 0
    base = per_round["plain"]
    result: dict[str, Any] = {
        "steps_per_round": steps,
        "rounds": rounds,
        "plain_ns_per_step": statistics.median(base),
    }
    for name, values in per_round.items():
        if name == "plain":
            continue
        added = statistics.median(v - b for v, b in zip(values, base, strict=True))
        result[name] = {
            "ns_per_step": statistics.median(values),
            "added_ns_per_step": added,
            "ratio_to_plain": statistics.median(values) / statistics.median(base),
        }
        written, timed, modelled = counted[name]
        clock = xfertop.reporter._clock
        if timed and clock is not None:
            result[name].update(
                {
                    "gpu_timed_fraction": timed / written,
                    "gpu_every": clock.gap.sampling.every,
                    "gpu_cost_ns": clock.gap.sampling.cost_ns,
                }
            )
        if fake is not None and written:
            result[name]["modelled_cuda_ns_per_step"] = modelled / written
    return result


def _modelled_ns(fake: Any) -> int:
    costs = fake.costs_ns
    return (
        fake.records * costs["record"]
        + fake.queries * costs["query"]
        + fake.elapsed_calls * costs["elapsed_time"]
    )


def fake_cuda_model(steps: int, rounds: int) -> dict[str, Any]:
    """The CPU loops with the step clock's GPU half on the fake CUDA at the H200's per-call costs."""
    sys.path.insert(0, str(REPO / "tests"))
    from fakes.fake_cuda import H200_COSTS_NS, FakeCuda
    from xfertop.reporter._gpu_sampling import GpuSampling
    from xfertop.reporter._gpu_timer import GpuTimer

    fake = FakeCuda(costs=H200_COSTS_NS)  # events complete at once: nothing is ever launched on it
    clock = xfertop.reporter._get_clock()
    assert clock is not None
    result: dict[str, Any] = {"costs_ns": H200_COSTS_NS}
    for sampling in (True, False):
        clock.gap.timer = GpuTimer(fake, 0)
        clock.gap.sampling = GpuSampling(enabled=sampling)  # a fresh policy: every step until it learns
        variants = loops(torch.device("cpu"), torch.ones(8, 64))
        result["sampling" if sampling else "every_step"] = side_by_side(variants, steps, rounds, fake)
    clock.gap.timer = None
    return result


def cuda_event_costs(calls: int) -> dict[str, float]:
    """Host ns per call: a timing event recorded through the public API, through GpuTimer, and query();
    and ``Tensor.is_pinned()``, which copy timing asks of every host-to-device copy's source (a driver
    query, cudaPointerGetAttributes, on a CUDA build: 5.19 us a call inside a training loop as
    unsloth-zoo#1257 measured it, a constant flag on a CPU build)."""
    from xfertop.reporter._gpu_timer import GpuTimer

    timer = GpuTimer(torch, torch.cuda.current_device())
    public = torch.cuda.Event(enable_timing=True)

    def per_call(action: Callable[[], object]) -> float:
        action()
        began = time.perf_counter_ns()
        for _ in range(calls):
            action()
        return (time.perf_counter_ns() - began) / calls

    def ours() -> None:
        timer.release(timer.record())

    # The pieces of copy timing's path for one .to(cuda) of the child's batch, outside a step (no step
    # open: the wrapper's own cost and the copy itself, not the step's accounting).
    with _copy_timing_on():  # the wrapper, called directly below; torch's own .to() for everyone else
        wrapped = torch.Tensor.to
    raw = wrapped.__wrapped__
    batch, device = torch.ones(8, 64), torch.device("cuda", torch.cuda.current_device())
    moved = batch.to(device)
    result = {
        "public_event_record_ns": per_call(public.record),
        "gpu_timer_record_ns": per_call(ours),
        "event_query_ns": per_call(public.query),
        "is_pinned_pageable_ns": per_call(batch.is_pinned),
        "is_pinned_pinned_ns": per_call(torch.ones(8, 64).pin_memory().is_pinned),
        "to_cuda_raw_ns": per_call(lambda: raw(batch, device, non_blocking=True)),
        "to_cuda_wrapped_ns": per_call(lambda: wrapped(batch, device, non_blocking=True)),
        "tensor_device_ns": per_call(lambda: moved.device),
        "device_ne_ns": per_call(lambda: moved.device != device),
        "nbytes_ns": per_call(lambda: batch.nbytes),
        "lambda_ns": per_call(lambda: None),  # the harness's own call, to subtract
    }
    torch.cuda.synchronize()
    return result


CHILD = """
import json, sys, time
import torch
from torch.utils.data import DataLoader, TensorDataset

steps, device = int(sys.argv[1]), torch.device(sys.argv[2])
loader = DataLoader(TensorDataset(torch.ones(steps * 8, 64)), batch_size=8)
if device.type == "cuda":
    torch.ones(1, device=device)

def fastest():
    passes = []
    for _ in range(3):  # the fastest of three passes: less noise from other work on the machine
        began = time.perf_counter_ns()
        for (batch,) in loader:
            moved = batch.to(device, non_blocking=True)
            moved.add_(1.0)
        if device.type == "cuda":
            torch.cuda.synchronize()
        passes.append((time.perf_counter_ns() - began) / steps)
    return min(passes)

times = {"ns_per_step": fastest()}
if sys.argv[3:4] == ["--then-hooks"]:
    # `xfertop run`'s own hooks, as autopatch.install puts them on at torch's import (torch is in: now).
    # Then off and on in turns: the hooks this loop runs through (DataLoader.__iter__, Tensor.to) swapped
    # for torch's own and back, so that the machine's drift weighs on both sides alike.
    from xfertop.launch import autopatch
    autopatch.install(copy_timing=True)
    hooked = DataLoader.__iter__, torch.Tensor.to
    times["on_ns_per_step"], times["off_ns_per_step"] = [], []
    for _ in range(int(sys.argv[4]) if sys.argv[4:] else 3):
        DataLoader.__iter__, torch.Tensor.to = hooked
        times["on_ns_per_step"].append(fastest())
        DataLoader.__iter__, torch.Tensor.to = hooked[0].__wrapped__, hooked[1].__wrapped__
        times["off_ns_per_step"].append(fastest())
print(json.dumps(times))
"""


def _child_script() -> Path:
    script = Path(tempfile.mkdtemp(prefix="xfertop-overhead-")) / "loop.py"
    script.write_text(CHILD)
    return script


def run_hooks_in_one_process(steps: int, rounds: int, device: str, turns: int = 6) -> dict[str, Any]:
    """CHILD's loop before `xfertop run`'s hooks go on, then with them on and off in ``turns`` turns (the
    ones it runs through swapped for torch's own and back), in one process a round: the cost of run's own
    hooks without the spread between processes of ``run_modes`` (tens of us) and without the side-by-side
    rows' stand-in (``xfertop.watch`` for run's DataLoader hook), which read about half of it on the CPU VM
    (docs/measurements/cpu-2026-12-06-s40/). A round's figure is the median of its on-minus-off
    differences, each on pass against the off passes either side of it (session 41's H100 read rounds of
    +7.4, +19.6 and +12.7 us from one on-off-on each)."""
    script = _child_script()
    before: list[float] = []
    added: list[float] = []
    for _ in range(rounds):
        out = subprocess.run(
            [sys.executable, str(script), str(steps), device, "--then-hooks", str(turns)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        times = json.loads(out.strip().splitlines()[-1])
        before.append(times["ns_per_step"])
        on, off = times["on_ns_per_step"], times["off_ns_per_step"]
        # The first on pass has no off pass before it: it is weighed against the one after it alone.
        sides = [off[0], *((a + b) / 2 for a, b in itertools.pairwise(off))]
        added.append(statistics.median(o - s for o, s in zip(on, sides, strict=True)))
    base, median = statistics.median(before), statistics.median(added)
    return {
        "steps": steps,
        "rounds": rounds,
        "device": device,
        "before": {"ns_per_step": base, "added_ns_per_step": 0.0, "ratio_to_direct": 1.0},
        "run's hooks on": {
            "ns_per_step": base + median,
            "added_ns_per_step": median,
            "ratio_to_direct": (base + median) / base,
            "added_ns_per_round": added,
        },
    }


def run_modes(steps: int, rounds: int, device: str) -> dict[str, Any]:
    """The same DataLoader script: direct, under `xfertop run --no-copy-timing`, under `xfertop run` (which
    times copies by default)."""
    script = _child_script()
    run = [sys.executable, "-m", "xfertop.cli.run"]
    modes = {
        "direct": [],
        "xfertop run --no-copy-timing": [*run, "--no-copy-timing"],
        "xfertop run (copy timing, the default)": run,
    }
    per_step: dict[str, list[float]] = {name: [] for name in modes}
    process_s: dict[str, list[float]] = {name: [] for name in modes}
    for _ in range(rounds):
        for name, prefix in modes.items():
            command = [*prefix, *(["--"] if prefix else []), sys.executable, str(script), str(steps), device]
            began = time.perf_counter()
            out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
            process_s[name].append(time.perf_counter() - began)
            per_step[name].append(json.loads(out.strip().splitlines()[-1])["ns_per_step"])
    base = statistics.median(per_step["direct"])
    result: dict[str, Any] = {"steps": steps, "rounds": rounds, "device": device}
    for name in modes:
        median = statistics.median(per_step[name])
        result[name] = {
            "ns_per_step": median,
            "added_ns_per_step": median - base,
            "ratio_to_direct": median / base,
            "process_wall_s": statistics.median(process_s[name]),
            # Each round against the direct run of the same round: the spread says what one figure is worth
            # (these rows moved by tens of us between rounds on both machines, session 23).
            "added_ns_per_round": [
                ns - direct for ns, direct in zip(per_step[name], per_step["direct"], strict=True)
            ],
        }
    return result


def print_section(section: str, values: dict[str, Any]) -> None:
    """One line per variant, printed as soon as its section is measured (a cut-short run keeps them)."""
    for name, value in values.items():
        if isinstance(value, dict) and "added_ns_per_step" in value:
            ratio = value.get("ratio_to_plain", value.get("ratio_to_direct"))
            line = f"{section:20} {name:26} +{value['added_ns_per_step'] / 1000:7.2f} us/step (x{ratio:.3f})"
            if value.get("gpu_cost_ns"):
                line += (
                    f"  k={value['gpu_every']} timed {value['gpu_timed_fraction']:.1%}"
                    f" cuda-calls {value['gpu_cost_ns'] / 1000:.1f} us/timed step"
                )
            if "modelled_cuda_ns_per_step" in value:
                line += f"  modelled CUDA calls {value['modelled_cuda_ns_per_step'] / 1000:.2f} us/step"
            if value.get("added_ns_per_round") and name != "direct":
                line += "  rounds " + ", ".join(f"{ns / 1000:+.1f}" for ns in value["added_ns_per_round"])
            print(line, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--quick", action="store_true", help="fewer steps and rounds: a few seconds")
    parser.add_argument(
        "--run-rounds",
        type=int,
        default=None,
        help="rounds of the `xfertop run` processes (default 5, 3 with --quick; each starts torch)",
    )
    add_cores_argument(parser)
    args = parser.parse_args()
    pin(args.cores)
    steps, rounds = (5_000, 3) if args.quick else (50_000, 7)
    os.environ.setdefault("XFERTOP_DIR", tempfile.mkdtemp(prefix="xfertop-overhead-rings-"))
    result: dict[str, Any] = {
        "benchmark": "reporter_overhead",
        "machine": {
            "host": platform.node(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        },
    }
    cpu_batch = torch.ones(8, 64)
    result["in_process_cpu"] = side_by_side(loops(torch.device("cpu"), cpu_batch), steps, rounds)
    print_section("in_process_cpu", result["in_process_cpu"])
    if torch.cuda.is_available():
        cuda_batch = torch.ones(8, 64).pin_memory()
        result["in_process_cuda"] = side_by_side(loops(torch.device("cuda"), cuda_batch), steps // 2, rounds)
        print_section("in_process_cuda", result["in_process_cuda"])
        result["cuda_event_costs"] = cuda_event_costs(steps // 5)
        for name, value in result["cuda_event_costs"].items():
            print(f"cuda_event_costs {name:28} {value / 1000:7.2f} us/call", flush=True)
    result["fake_cuda_model"] = fake_cuda_model(steps // 2, rounds)
    print_section("fake_cuda/sampling", result["fake_cuda_model"]["sampling"])
    print_section("fake_cuda/every_step", result["fake_cuda_model"]["every_step"])
    # After the sections above: partitioning stays on in this process once set.
    devices = ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]
    for device_name, (source, dataloader) in itertools.product(
        devices, (("repeat", False), ("dataloader", True))
    ):
        section = f"as_run_{device_name}_{source}"
        device = torch.device(device_name)
        result[section] = side_by_side(as_run_loops(device, cpu_batch, dataloader), steps // 2, rounds)
        print_section(section, result[section])
    child_device = "cuda" if torch.cuda.is_available() else "meta"
    run_rounds = args.run_rounds or (3 if args.quick else 5)
    result["run_hooks_in_one_process"] = run_hooks_in_one_process(steps // 5, run_rounds, child_device)
    print_section("run_hooks_one_process", result["run_hooks_in_one_process"])
    result["xfertop_run"] = run_modes(steps // 5, run_rounds, child_device)
    print_section("xfertop_run", result["xfertop_run"])
    result["reporter_status"] = xfertop.reporter.status()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "reporter_overhead.json").write_text(json.dumps(result, indent=2))
    print(f"wrote {args.out_dir / 'reporter_overhead.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
