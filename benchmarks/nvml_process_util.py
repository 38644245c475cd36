"""Can NVML's per-process utilisation give a rank's GPU busy share on a shared GPU?

xfertop reads the GPU's busy share from ``nvmlDeviceGetUtilizationRates`` only where the rank is its GPU's
one process (analysis/evidence.py ``sole_user_gpu``); on a shared GPU (two jobs, a notebook beside a
job) the verdicts go without it. ``nvmlDeviceGetProcessUtilization`` returns per-process SM samples
(research/diagnosis.md), but what a real GPU returns has not been measured: the samples' shape and
period, what a call costs, and whether a process's ``smUtil`` tracks its own kernels' share of the time.

Run on a GPU machine:  python benchmarks/nvml_process_util.py OUT_DIR [--seconds S]
Child processes on GPU 0 each keep the GPU busy a set share of their time (torch.cuda._sleep bursts in
20 ms periods, the rest host sleep) and measure that share themselves with CUDA events. Phases: one
process at 90%, one at 40%, two together at 60% and 30%, then none. Meanwhile NVML is polled every
0.5 s: the raw per-process samples, the device's utilisation, and each call's cost. Writes
OUT_DIR/nvml_process_util.json and prints, per phase and process, the mean smUtil against the measured
share. Without a GPU it says so in one line and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

POLL_S = 0.5
CHILD = r"""
import json, sys, time
import torch
duty, seconds = float(sys.argv[1]), float(sys.argv[2])
period_s = 0.020
torch.ones(1, device="cuda")
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record(); torch.cuda._sleep(10_000_000); end.record(); end.synchronize()
cycles_per_ms = 10_000_000 / start.elapsed_time(end)
print("ready", flush=True)
busy_ms, began = 0.0, time.perf_counter()
while time.perf_counter() - began < seconds:
    period_began = time.perf_counter()
    start.record(); torch.cuda._sleep(int(duty * period_s * 1000 * cycles_per_ms)); end.record()
    end.synchronize()
    busy_ms += start.elapsed_time(end)
    time.sleep(max(0.0, period_s - (time.perf_counter() - period_began)))
wall_s = time.perf_counter() - began
print(json.dumps({"busy_share": busy_ms / 1000 / wall_s, "wall_s": wall_s}), flush=True)
"""
PHASES: dict[str, tuple[float, ...]] = {"alone-90": (0.9,), "alone-40": (0.4,), "shared-60-30": (0.6, 0.3)}


def timed(fn: Any, *args: Any) -> tuple[Any, float]:
    began = time.perf_counter()
    try:
        result: Any = fn(*args)
    except Exception as exc:  # NotFound with no process on the GPU: recorded, not raised
        result = exc
    return result, (time.perf_counter() - began) * 1e3


def sample_dicts(samples: Any) -> list[dict[str, Any]]:
    if isinstance(samples, Exception):
        return [{"error": f"{type(samples).__name__}: {samples}"}]
    fields = ("pid", "timeStamp", "smUtil", "memUtil", "encUtil", "decUtil")
    return [{f: getattr(s, f, None) for f in fields} for s in samples]


def poll(pynvml: Any, handle: Any, seconds: float) -> list[dict[str, Any]]:
    """Every POLL_S: the per-process samples newer than the last seen, and the device's utilisation."""
    polls: list[dict[str, Any]] = []
    last_seen = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        samples, per_process_ms = timed(pynvml.nvmlDeviceGetProcessUtilization, handle, last_seen)
        rows = sample_dicts(samples)
        stamps = [row["timeStamp"] for row in rows if row.get("timeStamp")]
        last_seen = max([last_seen, *stamps])
        rates, device_ms = timed(pynvml.nvmlDeviceGetUtilizationRates, handle)
        polls.append(
            {
                "at": time.time(),
                "samples": rows,
                "per_process_call_ms": per_process_ms,
                "device_util": None if isinstance(rates, Exception) else rates.gpu,
                "device_call_ms": device_ms,
            }
        )
        time.sleep(POLL_S)
    return polls


def run_phase(pynvml: Any, handle: Any, duties: tuple[float, ...], seconds: float) -> dict[str, Any]:
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(duty), str(seconds)], stdout=subprocess.PIPE, text=True
        )
        for duty in duties
    ]
    for child in children:
        assert child.stdout is not None
        if child.stdout.readline().strip() != "ready":
            raise RuntimeError(f"child {child.pid} did not start")
    polls = poll(pynvml, handle, seconds - 1.0)
    measured = {}
    for child, duty in zip(children, duties, strict=True):
        out, _ = child.communicate(timeout=seconds + 30)
        measured[child.pid] = {"duty_asked": duty, **json.loads(out.strip().splitlines()[-1])}
    return {"measured": measured, "polls": polls}


def summarise(name: str, phase: dict[str, Any]) -> list[str]:
    lines = []
    polls = phase["polls"][2:]  # the first second: children settling, older samples
    device = [p["device_util"] for p in polls if p["device_util"] is not None]
    lines.append(f"{name}: device util mean {statistics.mean(device) if device else float('nan'):.1f}%")
    for pid, figures in phase["measured"].items():
        sm = [s["smUtil"] for p in polls for s in p["samples"] if s.get("pid") == pid]
        mean_sm = statistics.mean(sm) if sm else float("nan")
        lines.append(
            f"  pid {pid}: measured busy {100 * figures['busy_share']:.1f}%, smUtil mean {mean_sm:.1f}% "
            f"over {len(sm)} samples"
        )
    per_poll = [len(p["samples"]) for p in polls]
    costs = [p["per_process_call_ms"] for p in polls]
    if per_poll:
        lines.append(
            f"  samples per {POLL_S} s poll: {min(per_poll)}-{max(per_poll)}; "
            f"call {statistics.median(costs):.3f} ms median"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--seconds", type=float, default=10.0, help="each phase's length (default 10)")
    args = parser.parse_args()
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    except Exception as exc:
        print(f"nvml_process_util: no NVML GPU ({exc})", file=sys.stderr)
        return 2
    document: dict[str, Any] = {
        "gpu": pynvml.nvmlDeviceGetName(handle),
        "driver": pynvml.nvmlSystemGetDriverVersion(),
        "phases": {},
    }
    for name, duties in PHASES.items():
        document["phases"][name] = run_phase(pynvml, handle, duties, args.seconds)
    document["phases"]["idle"] = {"measured": {}, "polls": poll(pynvml, handle, 3.0)}
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "nvml_process_util.json").write_text(json.dumps(document, indent=1, default=str))
    for name, phase in document["phases"].items():
        print("\n".join(summarise(name, phase)))
    first = next((s for p in document["phases"]["idle"]["polls"] for s in p["samples"]), None)
    print(f"idle: first answer {first}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
