"""What does `xfertop attach` cost the job it samples? Step time sampled vs not, side by side.

    python benchmarks/attach_cost.py OUT_DIR [--device cpu|cuda] [--pairs 5] [--block-s 6] [--rate 50]
                                             [--blocking]

A child process runs a training loop (DataLoader with 2 workers, an MLP, SGD, one .item() per step so
the step time is real time on a GPU too) and prints each step's end time and duration. The parent
alternates blocks of the same length: not sampled, then sampled by xfertop's own StackSampler (the
default: py-spy record -r 50 -d 2 -f raw -t -s -i --nonblocking, windows back to back), so slow drift
of a shared machine falls on both sides. Prints the per-block medians and the ratio of median step
times, and writes OUT_DIR/attach_cost.json. ``--blocking`` adds blocks sampled without --nonblocking
(py-spy stops every thread for each sample; py-spy#872) for comparison.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

from xfertop.sources.stacks import pyspy_runner  # noqa: E402
from xfertop.sources.stacks.source import StackSampler  # noqa: E402

CHILD_READY = "ready"


def child_loop(device_name: str) -> int:
    """The sampled job: prints "<monotonic_ns> <step_ms>" per step until killed.

    A step is one whole iteration, next(loader) included: from one step's end to the next one's.
    """
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    torch.set_num_threads(1)
    device = torch.device(device_name)
    data = TensorDataset(torch.randn(4096, 256))
    loader = DataLoader(
        data, batch_size=64, num_workers=2, persistent_workers=True, pin_memory=device.type == "cuda"
    )
    width = 4096 if device.type == "cpu" else 16384
    model = torch.nn.Sequential(torch.nn.Linear(256, width), torch.nn.ReLU(), torch.nn.Linear(width, 1))
    model = model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    print(CHILD_READY, flush=True)
    previous_ns = time.perf_counter_ns()
    while True:
        for (batch,) in loader:
            batch = batch.to(device, non_blocking=True)
            loss = model(batch).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss.item()
            ended_ns = time.perf_counter_ns()
            print(time.monotonic_ns(), (ended_ns - previous_ns) / 1e6, flush=True)
            previous_ns = ended_ns


class StepReader:
    """Collects the child's step lines on a thread: (monotonic_ns at step end, step_ms)."""

    def __init__(self, stream) -> None:
        self.steps: list[tuple[int, float]] = []
        self._stream = stream
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        for line in self._stream:
            fields = line.split()
            if len(fields) == 2:
                self.steps.append((int(fields[0]), float(fields[1])))

    def between(self, start_ns: int, end_ns: int) -> list[float]:
        return [ms for at_ns, ms in list(self.steps) if start_ns <= at_ns < end_ns]


def sampled_block(pid: int, seconds: float, rate_hz: int, nonblocking: bool) -> dict[str, float]:
    """Run the real sampler for ``seconds``; returns how many windows it took and their wall time."""
    sampler = StackSampler(pid, rate_hz=rate_hz, window_s=2, with_ranks=False, nonblocking=nonblocking)
    windows: list[float] = []
    sampler.subscribe(lambda state: windows.extend(w.duration_s for w in state.windows))
    sampler.start()
    time.sleep(seconds)  # the block's length: a measurement interval, not a synchronisation
    sampler.stop(timeout_s=15)
    return {"windows": len(windows), "window_wall_s_mean": statistics.mean(windows) if windows else 0.0}


def p95_or_none(values: list[float]) -> float | None:
    return statistics.quantiles(values, n=20)[-1] if len(values) > 1 else None


def median_or_none(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def run(out_dir: Path, device: str, pairs: int, block_s: float, rate_hz: int, blocking: bool) -> dict:
    child = subprocess.Popen(
        [sys.executable, __file__, "--child", "--device", device],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert child.stdout is not None
        if child.stdout.readline().strip() != CHILD_READY:
            raise SystemExit("the training child exited before it was ready")
        reader = StepReader(child.stdout)
        time.sleep(block_s)  # warm-up (workers started, allocator warm): not part of any block
        modes = ["unsampled", "nonblocking"] + (["blocking"] if blocking else [])
        blocks = []
        for pair in range(pairs):
            for mode in modes:
                start_ns = time.monotonic_ns()
                info: dict[str, float] = {}
                if mode == "unsampled":
                    time.sleep(block_s)
                else:
                    info = sampled_block(child.pid, block_s, rate_hz, nonblocking=mode == "nonblocking")
                end_ns = time.monotonic_ns()
                steps = reader.between(start_ns, end_ns)
                blocks.append(
                    {
                        "pair": pair,
                        "mode": mode,
                        "steps": len(steps),
                        "median_step_ms": median_or_none(steps),
                        "mean_step_ms": statistics.mean(steps) if steps else None,
                        "p95_step_ms": p95_or_none(steps),
                        "seconds": (end_ns - start_ns) / 1e9,
                        **info,
                    }
                )
                print(
                    f"pair {pair} {mode:>11}: {len(steps):5d} steps, median "
                    f"{blocks[-1]['median_step_ms'] or float('nan'):.2f} ms, mean "
                    f"{blocks[-1]['mean_step_ms'] or float('nan'):.2f} ms",
                    flush=True,
                )
    finally:
        child.kill()
        child.wait()
    summary = {}
    for mode in modes:
        mine = [b for b in blocks if b["mode"] == mode and b["steps"]]
        summary[mode] = {
            "median_step_ms": median_or_none([b["median_step_ms"] for b in mine]),
            "mean_step_ms": median_or_none([b["mean_step_ms"] for b in mine]),
            "blocks": len(mine),
        }
    base = summary["unsampled"]
    for mode in modes[1:]:
        for key in ("median_step_ms", "mean_step_ms"):
            sampled, unsampled = summary[mode][key], base[key]
            ratio_key = key.replace("_step_ms", "_ratio")
            summary[mode][ratio_key] = sampled / unsampled if sampled and unsampled else None
    result = {
        "benchmark": "attach_cost",
        "device": device,
        "rate_hz": rate_hz,
        "window_s": 2,
        "block_s": block_s,
        "pairs": pairs,
        "py_spy": subprocess.run(
            [pyspy_runner.find_pyspy(), "--version"], capture_output=True, text=True
        ).stdout.strip(),
        "python": platform.python_version(),
        "machine": platform.node(),
        "cpus": _cpu_count(),
        "summary": summary,
        "blocks": blocks,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "attach_cost.json").write_text(json.dumps(result, indent=2) + "\n")
    for mode in modes[1:]:
        row = summary[mode]
        if row["median_ratio"] is None:
            print(f"{mode}: no steps measured")
            continue
        print(
            f"{mode}: median step {row['median_step_ms']:.2f} ms vs {base['median_step_ms']:.2f} ms "
            f"unsampled (ratio {row['median_ratio']:.3f}); mean {row['mean_step_ms']:.2f} vs "
            f"{base['mean_step_ms']:.2f} ms (ratio {row['mean_ratio']:.3f})"
        )
    return result


def _cpu_count() -> int | None:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out_dir", type=Path, nargs="?")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--block-s", type=float, default=6.0)
    parser.add_argument("--rate", type=int, default=pyspy_runner.DEFAULT_RATE_HZ)
    parser.add_argument("--blocking", action="store_true", help="also measure py-spy without --nonblocking")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child_loop(args.device)
    if args.out_dir is None:
        parser.error("OUT_DIR is required")
    run(args.out_dir, args.device, args.pairs, args.block_s, args.rate, args.blocking)
    return 0


if __name__ == "__main__":
    sys.exit(main())
