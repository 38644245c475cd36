"""Does watching a job slow it? One scenario's samples/s alone, beside the live view, and beside
`xfertop --once` polls, side by side in one run (rounds alternate the modes).

    python benchmarks/job_beside_viewer.py [--scenario loop_augment.py] [--seconds 15] [--rounds 2]
        [--modes alone,view,once] [--interval 1] [--under-run] [--json OUT]

- ``alone``: the job and nothing else of ours.
- ``view``: the live view (`python -m xfertop --interval I`) in a 160x48 pseudo-terminal, started before
  the job and drained all the time, as a person's terminal would.
- ``once``: a fresh `python -m xfertop --once --json` every I seconds, as benchmarks/score_scenarios.py
  polls every mode of every scenario (plain and truth included).
``--under-run`` runs the job under `xfertop run` in every mode, so that the view reads its ring.

Why: on the H200 the scorer's polls made scenario r's `next()` ~50x slower (630 vs 1,865 samples/s,
docs/measurements/h200-2026-12-03-s15/); whether a user's live view does the same is what this says.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pty_run import PtyProcess

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "benchmarks" / "scenarios"
RATE = re.compile(r"^result .*samples_per_s=([0-9.]+)", re.M)


def run_job(args: argparse.Namespace, mode: str, env: dict[str, str]) -> float | None:
    """One run of the scenario in ``mode``; its samples/s from the result line, or None."""
    py = sys.executable
    job = [py, str(SCENARIOS / args.scenario), "--seconds", f"{args.seconds:g}"]
    if args.under_run:
        job = [py, "-m", "xfertop", "run", "--", *job]
    viewer = None
    stop = threading.Event()
    poller = None
    if mode == "view":
        viewer = PtyProcess([py, "-m", "xfertop", "--interval", f"{args.interval:g}"], env=env)
        viewer.read_for(3.0)  # its first frames drawn before the job starts
    elif mode == "once":

        def poll() -> None:
            while not stop.is_set():
                subprocess.run(
                    [py, "-m", "xfertop", "--once", "--json"],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    check=False,
                )
                stop.wait(args.interval)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
    try:
        proc = subprocess.Popen(job, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        if viewer is not None:
            while proc.poll() is None:
                viewer.read_for(0.2)
        out, _ = proc.communicate()
    finally:
        stop.set()
        if poller is not None:
            poller.join(timeout=30)
        if viewer is not None:
            viewer.send(b"q")
            viewer.wait(10)
            viewer.close()  # kills a view that did not quit
    found = RATE.search(out or "")
    return float(found.group(1)) if found else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="loop_augment.py", help="a script in benchmarks/scenarios")
    parser.add_argument("--seconds", type=float, default=15.0, help="each job's --seconds")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--modes", default="alone,view,once")
    parser.add_argument(
        "--interval", type=float, default=1.0, help="the view's refresh and the polls' period"
    )
    parser.add_argument("--under-run", action="store_true", help="the job under `xfertop run` in every mode")
    parser.add_argument("--json", dest="json_out", default=None)
    args = parser.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    env = dict(os.environ)
    env["XFERTOP_DIR"] = tempfile.mkdtemp(prefix="xfertop-beside-")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH", "")]))
    rates: dict[str, list[float]] = {m: [] for m in modes}
    for round_ in range(args.rounds):
        order = modes if round_ % 2 == 0 else list(reversed(modes))
        for mode in order:
            rate = run_job(args, mode, env)
            print(f"round {round_} {mode:6s} {rate if rate is not None else 'no result line'}", flush=True)
            if rate is not None:
                rates[mode].append(rate)
    medians = {m: statistics.median(r) for m, r in rates.items() if r}
    base = medians.get("alone")
    print(f"{args.scenario}, {args.seconds:g} s each, {args.rounds} rounds, interval {args.interval:g} s:")
    for mode, median in medians.items():
        ratio = f"  {median / base:.3f} of alone" if base else ""
        print(f"  {mode:6s} {median:10.1f} samples/s{ratio}")
    if args.json_out:
        Path(args.json_out).write_text(
            json.dumps(
                {"args": vars(args), "rates": rates, "medians": medians, "cpus": os.cpu_count()}, indent=1
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
