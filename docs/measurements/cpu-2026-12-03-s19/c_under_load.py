"""Scenario c under the scorer (`xfertop run`, the stream poller), N runs, with busy loops pinned:

    HOGCPU=0 python docs/measurements/cpu-2026-12-03-s19/c_under_load.py RUNS BUSY_LOOPS

Prints each run's last five polled verdicts; a wrong run also prints every poll as (seconds since launch,
verdict, steps in the ring, stepping, error). Three loops on core 0 (the core the scenario pins its four
workers to) make its batches arrive in bursts seconds apart, as on a loaded CI box.
"""

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests" / "scenarios"))
from scenario_scorer import scorer

runs, loops = int(sys.argv[1]), int(sys.argv[2])
hog = [sys.executable, "-c", "while True: pass"]
hogs = [subprocess.Popen(["taskset", "-c", os.environ.get("HOGCPU", "0-1"), *hog]) for _ in range(loops)]
try:
    for i in range(runs):
        scenario = scorer.SCENARIOS["c"]
        args = ("--device", "cpu", "--min-steps", "30")
        run = scorer.run_job(scenario, "run", 6.0, omp_threads="1", extra_args=args)
        score = scorer.score_mode(run, None, scenario.expect("cpu"))
        print(f"run {i}: right={score['verdict_right']} final={score['final_kinds']} wall={run.wall_s}")
        if not score["verdict_right"]:
            for p in run.polls:
                print("   ", (round(p.t, 1), p.kind, p.steps, p.stepping, p.error[-200:]))
        sys.stdout.flush()
finally:
    for h in hogs:
        h.kill()
