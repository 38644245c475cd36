"""CPU and terminal output of two xfertop trees side by side in one run (A/B), alternating, with a load.

Each tree runs as ``env PYTHONPATH=<tree>/src python -m xfertop --interval <1/rate>`` in a 160x48 pty
(``tui_cpu.measure``). Make the "before" tree with ``git worktree add /tmp/xt_base <commit>``.

    python benchmarks/tui_cpu_ab.py --before /tmp/xt_base --after . --seconds 25 --rates-hz 1,4 \
        --load "python -m xfertop.launch.demo_job --phase-seconds 600"
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tui_cpu import measure


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="a checkout of the baseline")
    parser.add_argument("--after", type=Path, default=Path("."))
    parser.add_argument("--seconds", type=float, default=25.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--rates-hz", default="1,4")
    parser.add_argument("--load", help="a command to run in the background for the whole benchmark")
    args = parser.parse_args()
    load = (
        subprocess.Popen(shlex.split(args.load), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if args.load
        else None
    )
    try:
        time.sleep(3.0 if load else 0.0)
        for rate_hz in (float(rate) for rate in args.rates_hz.split(",")):
            for name, tree in (("before", args.before), ("after", args.after)):
                argv = [
                    "env",
                    f"PYTHONPATH={tree.resolve() / 'src'}",
                    sys.executable,
                    "-m",
                    "xfertop",
                    "--interval",
                    str(1.0 / rate_hz),
                ]
                result = measure(argv, args.seconds, args.warmup, 160, 48)
                cpu = result.get("cpu_percent_of_one_core")
                figures = (
                    f"{cpu:.1f}% of a core, {result['output_bytes'] / 1000:.0f} KB written"
                    if cpu is not None
                    else str(result)
                )
                print(f"{rate_hz:g} Hz {name:6s}: {figures}", flush=True)
    finally:
        if load is not None:
            load.terminate()
            load.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
