"""xfertop's pinned H2D/D2H figures against a direct CUDA-runtime reference, in the same run.

Builds benchmarks/cuda_ref/h2d_ref.cu with nvcc, then for each size (>= 256 MiB) runs the reference and
`python -m xfertop.bench pinned_nb d2h` one after the other, twice, and prints xfertop / reference per
direction. Passes when every ratio is within 3% of 1.

    python benchmarks/bench_vs_cuda_reference.py [--sizes 256MiB,1GiB] [--json OUT.json]

Exit 0 within 3%, 1 outside, 2 could not run (no nvcc, no GPU): with a one-line reason.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import median

from xfertop.bench.client import BenchClient
from xfertop.bench.method import copies_per_sample
from xfertop.bench.protocol import RunDone
from xfertop.bench.sizes import format_size, parse_size

HERE = Path(__file__).resolve().parent
TOLERANCE = 0.03
SAMPLES = 5
ROUNDS = 2


def _nvcc() -> str | None:
    found = shutil.which("nvcc")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root and (Path(root) / "bin" / "nvcc").exists():
            return str(Path(root) / "bin" / "nvcc")
    return None


def build_reference(out_dir: Path) -> Path:
    nvcc = _nvcc()
    if nvcc is None:
        raise SystemExit("could not run: nvcc not found (install the CUDA toolkit or set CUDA_HOME)")
    binary = out_dir / "h2d_ref"
    built = subprocess.run(
        [nvcc, "-O2", "-o", str(binary), str(HERE / "cuda_ref" / "h2d_ref.cu")],
        capture_output=True,
        text=True,
        check=False,
    )
    if built.returncode != 0:
        raise SystemExit(f"could not run: nvcc failed: {built.stderr.strip().splitlines()[-1:]}")
    return binary


def run_reference(binary: Path, size: int, gpu: int) -> dict[str, float]:
    """direction -> median GB/s of the reference."""
    out = subprocess.run(
        [str(binary), str(size), str(copies_per_sample(size)), str(SAMPLES), str(gpu)],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"could not run: the CUDA reference failed: {out.stderr.strip()[:200]}")
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return {line["direction"]: median(line["gb_per_s"]) for line in lines}


def run_xfertop(size: int, gpu: int) -> dict[str, float]:
    outcome = BenchClient(
        [
            "--backend",
            "cuda",
            "--gpu",
            str(gpu),
            "--samples",
            str(SAMPLES),
            "--size",
            str(size),
            "pinned_nb",
            "d2h",
        ]
    ).run_to_end()
    if not isinstance(outcome.final, RunDone):
        raise SystemExit(f"could not run: xfertop bench: {outcome.final.reason}")
    rows = [r for c in outcome.final.run.cases for r in c.rows if r.memory == "pinned"]
    return {r.direction: r.value for r in rows}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="256MiB,1GiB")
    parser.add_argument("--gpu", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    if not shutil.which("nvidia-smi"):
        print("could not run: no NVIDIA GPU here (nvidia-smi not found)", file=sys.stderr)
        return 2
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    results = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            binary = build_reference(Path(tmp))
            for size in sizes:
                refs, ours = [], []
                for _ in range(ROUNDS):
                    refs.append(run_reference(binary, size, args.gpu))
                    ours.append(run_xfertop(size, args.gpu))
                for direction in ("h2d", "d2h"):
                    ref = median(r[direction] for r in refs)
                    torch_figure = median(o[direction] for o in ours)
                    results.append(
                        {
                            "size_bytes": size,
                            "direction": direction,
                            "xfertop_gb_per_s": torch_figure,
                            "cuda_ref_gb_per_s": ref,
                            "ratio": torch_figure / ref,
                        }
                    )
    except SystemExit as exc:
        print(exc, file=sys.stderr)
        return 2
    ok = all(abs(r["ratio"] - 1) <= TOLERANCE for r in results)
    print(f"{'size':>8} {'dir':4} {'xfertop':>9} {'CUDA ref':>9} {'ratio':>6}")
    for r in results:
        print(
            f"{format_size(r['size_bytes']):>8} {r['direction'].upper():4} {r['xfertop_gb_per_s']:9.2f} "
            f"{r['cuda_ref_gb_per_s']:9.2f} {r['ratio']:6.3f}"
        )
    print(
        f"PASS: every ratio within {TOLERANCE:.0%} of 1"
        if ok
        else f"FAIL: some ratio is more than {TOLERANCE:.0%} away from 1"
    )
    if args.json:
        args.json.write_text(json.dumps({"tolerance": TOLERANCE, "results": results, "pass": ok}, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
