"""(Session 35: session 34's layers.py with two more rows, the GPU clock kept off.)

Where `xfertop run`'s cost per step comes from, layer by layer, each in its own process, rounds
interleaved: the benchmark's DataLoader loop (benchmarks/reporter_overhead.py CHILD) plain; with run's
hooks installed in-process but no copy timing; with copy timing; and under `xfertop run` itself (its
parent process polling the ring and NVML beside the job). On the H100 of session 33 the in-process
as-run row read +6.8 us/step and `xfertop run` +15.5: this says which layer holds the difference.

    python docs/measurements/h100-2026-12-06-s34/layers.py [steps] [device] [rounds]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, sys, time
mode = sys.argv[3]
if mode.startswith("install"):
    from xfertop.launch import autopatch
    autopatch.install(copy_timing=mode.startswith("install+copy"))
    if mode.endswith("-nogpu"):  # the GPU clock never starts: no events, no sampling
        from xfertop.reporter._gpu_gap import GpuGap
        GpuGap.use_cuda_device = lambda self, index: None
import torch
from torch.utils.data import DataLoader, TensorDataset
steps, device = int(sys.argv[1]), torch.device(sys.argv[2])
loader = DataLoader(TensorDataset(torch.ones(steps * 8, 64)), batch_size=8)
if device.type == "cuda":
    torch.ones(1, device=device)
passes = []
for _ in range(3):
    began = time.perf_counter_ns()
    for (batch,) in loader:
        moved = batch.to(device, non_blocking=True)
        moved.add_(1.0)
    if device.type == "cuda":
        torch.cuda.synchronize()
    passes.append((time.perf_counter_ns() - began) / steps)
print(json.dumps({"ns_per_step": min(passes)}))
"""


def main() -> int:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    device = sys.argv[2] if len(sys.argv) > 2 else "cuda"
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    script = Path(tempfile.mkdtemp(prefix="xfertop-layers-")) / "loop.py"
    script.write_text(CHILD)
    run = [sys.executable, "-m", "xfertop.cli.run"]
    modes = {
        "plain": [sys.executable, str(script), str(steps), device, "plain"],
        "install (hooks, no copy timing)": [sys.executable, str(script), str(steps), device, "install"],
        "install+copy (run's hooks in-process)": [sys.executable, str(script), str(steps), device, "install+copy"],
        "install, no GPU clock": [sys.executable, str(script), str(steps), device, "install-nogpu"],
        "install+copy, no GPU clock": [sys.executable, str(script), str(steps), device, "install+copy-nogpu"],
        "xfertop run --no-copy-timing": [*run, "--no-copy-timing", "--", sys.executable, str(script), str(steps), device, "plain"],
        "xfertop run": [*run, "--", sys.executable, str(script), str(steps), device, "plain"],
    }
    per_step: dict[str, list[float]] = {name: [] for name in modes}
    for _ in range(rounds):
        for name, command in modes.items():
            out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
            per_step[name].append(json.loads(out.strip().splitlines()[-1])["ns_per_step"])
    base = per_step["plain"]
    for name, values in per_step.items():
        added = [(v - b) / 1000 for v, b in zip(values, base, strict=True)]
        print(
            f"{name:40} {statistics.median(values) / 1000:7.2f} us/step  added {statistics.median(added):+6.2f}"
            f"  rounds {', '.join(f'{a:+.1f}' for a in added)}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
