"""Read a scenario's kept rings again (score_scenarios.py --logs keeps them as <id>-<mode>-rings/): for each
ring, the passes' cost as a share of the window (what the advice says) at every 50th step, gross (each
pass step's wall beyond a typical step, as before b340943) and net (less the steps that refilled the
queue after it, as now), and the verdict on the whole ring.

    PYTHONPATH=src python docs/measurements/gpu-2026-12-07-s43/reread_rings.py LOGS_DIR [IDS]
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from xfertop.analysis.steps import window_stats
from xfertop.analysis.verdict import rank_verdict
from xfertop.sources.jobs.ring_reader import RingReader


def gross_share(steps: list, first: int, last: int) -> float:
    window = [s for s in steps if first <= s.step <= last]
    typical = statistics.median(s.wall_ms for s in window)
    beyond = sum(max(0.0, s.wall_ms - typical) for s in window if s.nested_pass)
    return beyond / sum(s.wall_ms for s in window)


def main() -> None:
    logs = Path(sys.argv[1])
    ids = sys.argv[2].split(",") if len(sys.argv) > 2 else None
    for ring_dir in sorted(logs.glob("*-rings")):
        scenario = ring_dir.name.split("-")[0]
        if ids and scenario not in ids:
            continue
        for ring in sorted(ring_dir.glob("*.ring")):
            reader = RingReader(str(ring))
            reader.poll()
            steps = list(reader.steps_tuple())
            if not steps or not any(s.nested_pass for s in steps):
                continue
            passes = sum(s.nested_pass for s in steps)
            print(f"{ring_dir.name}/{ring.name}: {len(steps)} steps, {passes} passes")
            for end in range(100, len(steps) + 1, 50):
                stats = window_stats(steps[:end])
                if stats is None or not stats.nested_pass_steps:
                    continue
                gross = gross_share(steps, stats.first_step, stats.last_step)
                print(
                    f"  to step {steps[end - 1].step}: window {stats.steps} steps, "
                    f"{stats.nested_pass_steps} passes: gross {gross:.1%}, net {stats.nested_pass_share:.1%}"
                )
            verdict = rank_verdict(steps)
            print(f"  verdict on the whole ring: {verdict.headline}")
            for line in verdict.advice:
                print(f"    advice: {line}")


if __name__ == "__main__":
    main()
