"""Probe accuracy on a GPU: what `xfertop probe` says a fix would buy, against the job with that fix.

The jobs are the corpus's own scripts (benchmarks/scenarios/), side by side in one run:
- starved: the JPEG + torchvision pipeline with too few workers (``image_pipeline.py``, scenario b, with
  a ResNet-152 so that it can be fed on 16 cores) under the probe; fed: the same script with
  ``--fed-workers`` workers, plain, and with two thirds of them: where both reach the same samples/s
  (within 5%), more workers no longer help and the fed job is compute-bound. Goal (issue 21): the probe's
  input-free samples/s within 20% of the fed job's, where the fed job is compute-bound.
- compute-bound: the Transformer LM (``compute_bound.py``, scenario g) under the probe: its input-free
  speed-up at most 1.1x.
- pageable: 100 MB pageable batches (``pageable_copy.py --workers 0``, scenario d) under the probe; the
  fixes: the same script with ``--pin loader`` (``pin_memory=True``: the loop's thread pins each batch) and
  ``--pin source`` (the shards pinned once), plain. Goal: the probe's copies-free speed-up within 25% of
  the gain pinning gives (fixed samples/s over the job's own); its pinned-copies phase beside them.
Plain runs report samples/s on their result line; the probe reports step times (batch sizes below).
Prints a table and writes probe_accuracy_gpu.json to OUT_DIR. Needs CUDA; about 2-3 minutes on an H200.

    python benchmarks/probe_accuracy_gpu.py OUT_DIR [--steps 30] [--seconds 8]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

SCENARIOS = Path(__file__).resolve().parent / "scenarios"
#: Samples per step of each job on a GPU (the scripts' own batch sizes).
BATCH = {"image_pipeline.py": 64, "pageable_copy.py": 128}
STARVED = ["--arch", "resnet152"]


def plain_samples_per_s(script: str, args: list[str], seconds: float) -> float:
    done = subprocess.run(
        [sys.executable, str(SCENARIOS / script), "--seconds", str(seconds), *args],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    found = re.search(r"samples_per_s=([0-9.]+)", done.stdout)
    if done.returncode != 0 or not found:
        raise SystemExit(f"{script} {args} failed ({done.returncode}): {done.stderr.strip()[-300:]}")
    return float(found.group(1))


def probe(script: str, args: list[str], steps: int, warmup: int, env: dict[str, str]) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "xfertop", "probe", "--json", "--steps", str(steps), "--warmup", str(warmup),
         "--", sys.executable, str(SCENARIOS / script), "--seconds", "600", *args],
        capture_output=True, text=True, timeout=400, env=env,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"probe of {script} failed ({done.returncode}): {done.stderr.strip()[-300:]}")
    (rank,) = json.loads(done.stdout.splitlines()[-1])["ranks"]
    return rank


def starved_case(args: argparse.Namespace, env: dict[str, str]) -> dict:
    starved = probe("image_pipeline.py", STARVED, args.steps, args.warmup, env)
    fewer = args.fed_workers * 2 // 3
    fed = plain_samples_per_s(
        "image_pipeline.py", [*STARVED, "--workers", str(args.fed_workers)], args.seconds
    )
    fed_fewer = plain_samples_per_s("image_pipeline.py", [*STARVED, "--workers", str(fewer)], args.seconds)
    probe_free = BATCH["image_pipeline.py"] / starved["input_free_step_s"]
    result = {
        "starved_probe": starved,
        "starved_probe_input_free_samples_per_s": probe_free,
        "fed_samples_per_s": fed,
        "fed_fewer_workers_samples_per_s": fed_fewer,
        "fed_compute_bound": abs(fed_fewer / fed - 1) <= 0.05,
        "probe_over_fed": probe_free / fed,
        "starved_within_20_percent": abs(probe_free / fed - 1) <= 0.2,
    }
    print(f"starved image pipeline: as is {starved['baseline_samples_per_s'] or 0:8.1f} samples/s, "
          f"probe's input-free {probe_free:8.1f}")  # fmt: skip
    print(f"  fed ({args.fed_workers} workers): {fed:8.1f} samples/s ({fewer} workers: {fed_fewer:.1f}, "
          f"{'compute-bound' if result['fed_compute_bound'] else 'NOT compute-bound'}); "
          f"probe / fed {probe_free / fed:.3f} "
          f"({'within' if result['starved_within_20_percent'] else 'OUTSIDE'} 20%)")  # fmt: skip
    return result


def pageable_case(case: str, job: list[str], args: argparse.Namespace, env: dict[str, str]) -> dict:
    """The probe's copies-free and pinned-copies speed-ups beside what pinning buys the same job."""
    pageable = probe("pageable_copy.py", job, args.steps, args.warmup, env)
    as_is = plain_samples_per_s("pageable_copy.py", job, args.seconds)
    pinned = plain_samples_per_s("pageable_copy.py", [*job, "--pin", "loader"], args.seconds)
    pinned_source = plain_samples_per_s("pageable_copy.py", [*job, "--pin", "source"], args.seconds)
    pin_gain = max(pinned, pinned_source) / as_is
    result = {
        "job": job,
        "probe": pageable,
        "samples_per_s": as_is,
        "pinned_loader_samples_per_s": pinned,
        "pinned_source_samples_per_s": pinned_source,
        "pin_gain": pin_gain,
        "copy_free_over_pin_gain": (pageable["speedup_copy_free"] or 0) / pin_gain,
        "pinned_phase_over_pin_gain": (pageable.get("speedup_pinned") or 0) / pin_gain,
    }
    result["pageable_within_25_percent"] = abs(result["copy_free_over_pin_gain"] - 1) <= 0.25
    print(f"{case} ({' '.join(job)}): probe's copies-free {pageable['speedup_copy_free'] or 0:.3f}x, pinned "
          f"copies {pageable.get('speedup_pinned') or 0:.3f}x; pinning gives {pin_gain:.3f}x ({as_is:.1f} -> "
          f"{pinned:.1f} samples/s pin_memory=True, {pinned_source:.1f} pinned at the source); "
          f"copies-free / pin gain {result['copy_free_over_pin_gain']:.3f} "
          f"({'within' if result['pageable_within_25_percent'] else 'OUTSIDE'} 25%), pinned / pin gain "
          f"{result['pinned_phase_over_pin_gain']:.3f}")  # fmt: skip
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--steps", type=int, default=30, help="steps per probe phase")
    parser.add_argument("--warmup", type=int, default=15)
    parser.add_argument("--seconds", type=float, default=8.0, help="each plain run's --seconds")
    parser.add_argument("--fed-workers", type=int, default=12)
    parser.add_argument("--wide", type=int, default=512, help="pageable-compute's model width")
    parser.add_argument(
        "--cases",
        default="starved,compute,pageable,pageable-compute",
        help="which jobs to measure, comma-separated (default: all)",
    )
    args = parser.parse_args()
    env = {**os.environ, "XFERTOP_DIR": tempfile.mkdtemp(prefix="xfertop-probe-gpu-")}

    cases = set(args.cases.split(","))
    result: dict = {"args": vars(args) | {"out_dir": str(args.out_dir)}}
    passed = True
    if "starved" in cases:
        result |= starved_case(args, env)
        passed &= result["starved_within_20_percent"]
    if "compute" in cases:
        compute = probe("compute_bound.py", [], args.steps, args.warmup, env)
        speedup = compute["speedup_input_free"] or 0
        result |= {"compute_probe": compute, "compute_bound_at_most_1_1": speedup <= 1.1}
        print(f"compute-bound LM: input-free speed-up {speedup:.3f}x ({'<=' if speedup <= 1.1 else '>'} 1.1)")
        passed &= result["compute_bound_at_most_1_1"]
    for case, extra in (("pageable", []), ("pageable-compute", ["--width", str(args.wide)])):
        if case in cases:
            result[case] = pageable_case(case, ["--workers", "0", *extra], args, env)
            passed &= result[case]["pageable_within_25_percent"]
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "probe_accuracy_gpu.json").write_text(json.dumps(result, indent=2))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
