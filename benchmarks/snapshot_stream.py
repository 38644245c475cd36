"""The live view's snapshots as JSON lines: one process whose sources run as the live view's do, printing
the document `xfertop --once --json` prints (schema xfertop.snapshot/1, one line each) every --interval
seconds, with the analysis carried from one snapshot to the next as the view carries it (an ended job's
verdict frozen), until SIGTERM, SIGINT or a closed stdout.

    python benchmarks/snapshot_stream.py [--interval 1] [--pcie auto]

benchmarks/score_scenarios.py polls with it by default (``--poller stream``): a job then shares its
machine with what a user's live view costs (on the CPU VM 0.14 s of CPU to start, then ~0.002 s a
snapshot), not with a new interpreter every second (`--once`: 0.24 s of CPU each; on the H200 that load
slowed scenario r's `next()` ~50x: docs/measurements/h200-2026-12-03-s15/).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time

from xfertop.analysis.job_analysis import analyse
from xfertop.cli.viewer import build_sources
from xfertop.export.json_snapshot import snapshot_dict

#: The first snapshot waits this long at most for the sources' first samples (as `xfertop record`).
FIRST_SAMPLE_WAIT_S = 3.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between snapshots (default 1)")
    parser.add_argument("--pcie", default="auto", choices=("auto", "counters", "off"))
    args = parser.parse_args()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda _signum, _frame: stop.set())
    sources = build_sources(args.interval, pcie=args.pcie)
    sources.start()
    sources.start_topology()
    try:
        sources.wait_for_first_samples(FIRST_SAMPLE_WAIT_S)
        analysis = None
        next_frame = time.monotonic()
        while not stop.is_set():
            gpu, host, jobs, topology = sources.latest()
            analysis = analyse(jobs, gpu, analysis, host=host)
            document = snapshot_dict(
                gpu, host, jobs, timestamp=time.time(), topology=topology, analysis=analysis
            )
            print(json.dumps(document, default=str), flush=True)
            next_frame += args.interval
            stop.wait(max(0.0, next_frame - time.monotonic()))
    except BrokenPipeError:  # the reader went away: nothing more to say, nor to flush at exit
        sys.stdout = None  # type: ignore[assignment]
    finally:
        sources.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
