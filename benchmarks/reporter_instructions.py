"""The reporter's per-step cost in instructions: deterministic where wall time on a shared machine is not.

Wall-time figures for a few microseconds a step drift by more than the cost itself on the CPU VM
(reporter_overhead.py's `xfertop run` rows read -3.6 to +75 us there). Instructions retired do not drift:
callgrind counts them, collecting only inside the measured runs (``--toggle-collect`` on
``operator.call``, which the job wraps each run in), so torch's import and the driver's handshake cost
nothing. Per step = (Ir of 3N steps - Ir of N
steps) / 2N: the loop's entry and exit cancel.

The loop is scenario h's shape on the CPU: a DataLoader (workers 0) of a 64x256 batch and labels, both
copied with ``.to()`` (to the meta device: a copy with no data), a small MLP, backward, an SGD step,
``loss.item()``. Modes: ``plain`` (nothing of xfertop), ``nocopy`` (`xfertop run --no-copy-timing`'s
patches, installed in-process) and ``run`` (`xfertop run`'s default: copy timing and the model's marks);
``nocopy+gpu`` and ``run+gpu`` add the step clock's GPU half on tests/fakes' CUDA, whose calls cost
nothing here: the clock's own Python around them, one step in four timed as on the H200.

    python benchmarks/reporter_instructions.py [--steps N] [--modes plain,nocopy,run]

Needs valgrind (callgrind and callgrind_control) on PATH; about a minute a mode. Prints one line per mode
and the added instructions a step against ``plain``. Instructions are not time (a cache miss costs
hundreds of cycles and one instruction): use it to find and compare costs, and wall time on the GPU box
(reporter_overhead.py) to state them.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

JOB = r"""
import sys
mode = sys.argv[1]
GPU_EVERY = 4
if mode != "plain":
    from xfertop.launch import autopatch
    autopatch.install(copy_timing=mode.startswith("run"))
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(1)
data = TensorDataset(torch.randn(1024, 256), torch.randint(0, 10, (1024,)))
loader = DataLoader(data, batch_size=64, shuffle=False, num_workers=0)
model = torch.nn.Sequential(torch.nn.Linear(256, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = torch.nn.CrossEntropyLoss()
device = torch.device("meta")

def steps(n):
    done = 0
    while done < n:
        for x, y in loader:
            x.to(device, non_blocking=True)  # the copy a GPU job makes (meta: no data moves)
            y.to(device, non_blocking=True)
            loss = loss_fn(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            loss.item()
            done += 1
            if done == n:
                return

def use_fake_gpu():
    # The GPU half of the step clock on tests/fakes' CUDA (its calls cost no time here, so what is
    # counted is the clock's own Python around them), one step in GPU_EVERY timed, as on the H200 (k=4-5).
    import os
    sys.path.insert(0, os.path.join(os.environ["XFERTOP_REPO"], "tests"))
    from fakes.fake_cuda import FakeCuda
    import xfertop.reporter as reporter
    from xfertop.reporter._gpu_sampling import GpuSampling
    from xfertop.reporter._gpu_timer import GpuTimer
    clock = reporter._get_clock()
    clock.gap.timer = GpuTimer(FakeCuda(), 0)
    clock.gap.sampling = GpuSampling(enabled=False)
    clock.gap.sampling.every = GPU_EVERY

# -- the driver's protocol (reporter_bytecodes.py takes what is above) --
import operator, os
steps(200)  # warm-up: the step clock's model search settles, caches fill
if mode.endswith("+gpu"):
    use_fake_gpu()
    steps(200)
print("ready", flush=True)
# Spin, not block: valgrind takes callgrind_control's command (instrumentation on) only while the job
# runs. Nothing is counted until operator.call: collection is on only inside it (--toggle-collect).
while not os.path.exists(sys.argv[2]):
    pass
for count in sys.argv[3:]:
    operator.call(steps, int(count))
"""


def _control(pid: int, *args: str) -> None:
    subprocess.run(["callgrind_control", *args, str(pid)], check=True, capture_output=True)


def _measure(mode: str, counts: list[int], workdir: Path, cache_sim: bool = False) -> list[dict[str, int]]:
    """Instructions of each run of ``counts[i]`` steps, in one process: collection is on only inside
    ``operator.call`` (which the job calls once per run, and nothing in a step calls), and callgrind
    dumps as each call returns."""
    job = workdir / "job.py"
    job.write_text(JOB)
    out_file = workdir / f"callgrind.{mode}.out"
    go = workdir / f"go.{mode}"
    go.unlink(missing_ok=True)
    env = {
        **os.environ,
        "XFERTOP_DIR": str(workdir / "rings"),
        "XFERTOP_REPO": str(Path(__file__).resolve().parent.parent),
        "PYTHONHASHSEED": "0",
    }
    process = subprocess.Popen(
        [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            "--collect-atstart=no",
            "--toggle-collect=_operator_call",
            "--dump-after=_operator_call",
            *(["--cache-sim=yes"] if cache_sim else []),
            f"--callgrind-out-file={out_file}",
            sys.executable,
            str(job),
            mode,
            str(go),
            *map(str, counts),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    try:
        if process.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the {mode} job stopped before its steps")
        subprocess.run(["callgrind_control", "--instr=on", str(process.pid)], check=True, capture_output=True)
        go.touch()
    finally:
        if process.wait(timeout=1800) != 0:
            raise RuntimeError(f"the {mode} job failed (exit {process.returncode})")
    go.unlink()
    dumps = [Path(f"{out_file}.{run}") for run in range(1, len(counts) + 1)]
    return [_dump_totals(dump) for dump in dumps]


def _dump_totals(dump: Path) -> dict[str, int]:
    """The dump's totals by event: Ir, and with the cache simulator I1mr, D1mr, D1mw, ILmr, DLmr, DLmw."""
    text = dump.read_text(errors="replace")
    # "totals", not "summary": with instrumentation switched on mid-run, callgrind 3.19's summary line
    # can wrap below zero while the per-function costs (which totals adds up) are right.
    events = re.search(r"^events:\s+(.+)$", text, re.MULTILINE)
    totals = re.search(r"^totals:\s+(.+)$", text, re.MULTILINE)
    if events is None or totals is None:
        raise RuntimeError(f"no instruction count in {dump}")
    return dict(zip(events.group(1).split(), map(int, totals.group(1).split()), strict=False))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100, help="N: runs of N and 3N steps (default 100)")
    parser.add_argument("--modes", default="plain,nocopy,run,run+gpu")
    parser.add_argument(
        "--keep", type=Path, help="keep callgrind's dumps here (for callgrind_annotate: where the Ir go)"
    )
    parser.add_argument(
        "--cache-sim",
        action="store_true",
        help="also simulate the caches: first-level misses a step (instructions and data), a proxy for the "
        "cold cost of code that runs once between a DataLoader's steps (several times slower)",
    )
    args = parser.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("reporter_instructions: needs valgrind (callgrind, callgrind_control) on PATH", file=sys.stderr)
        return 2
    per_step: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="xfertop-ir-") as tmp:
        workdir = args.keep or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        for mode in args.modes.split(","):
            low, high = _measure(mode, [args.steps, 3 * args.steps], workdir, args.cache_sim)
            per_step[mode] = {event: (high[event] - low[event]) / (2 * args.steps) for event in high}
            line = f"{mode:10} {per_step[mode]['Ir']:12,.0f} Ir/step"
            if mode != "plain" and "plain" in per_step:
                added = per_step[mode]["Ir"] - per_step["plain"]["Ir"]
                line += f"   +{added:9,.0f} ({added / per_step['plain']['Ir']:+.1%} of plain)"
            if args.cache_sim:
                misses = {name: per_step[mode].get(name, 0.0) for name in ("I1mr", "D1mr", "D1mw", "DLmr")}
                line += "   L1 misses " + ", ".join(f"{name} {value:,.0f}" for name, value in misses.items())
                if mode != "plain" and "plain" in per_step:
                    l1 = sum(per_step[mode].get(n, 0.0) - per_step["plain"].get(n, 0.0) for n in misses)
                    line += f" (+{l1:,.0f})"
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
