"""`python -m xfertop.launch.demo_job`: a small training job that starves, then fixes itself live.

Phase 1 ("starved") loads every batch in the training process (num_workers=0) from pageable memory,
and each batch costs about three steps' worth of compute to load (simulated storage latency plus a real
decode), so the loop waits for data most of the time. Phase 2 ("fixed") switches to DataLoader
workers, pinned memory and non_blocking copies, enough to keep the model fed: the viewer's verdict
moves from input-bound to compute-bound. The load cost is calibrated against this machine's measured
compute time, so the story is the same on a laptop CPU and on an H200.

Without torch it runs a pure-Python imitation (``with xfertop.step():`` around a simulated step) so
`xfertop demo` works with no setup. SIGTERM, SIGINT and SIGHUP end it cleanly with exit status 0.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
import warnings
from dataclasses import dataclass

#: Loading one batch in phase 1 costs this many times one step's compute: the GPU idles ~3/4 of a step.
STARVED_LOAD_OVER_COMPUTE = 3.0
#: In phase 2 the workers together deliver a batch in this fraction of a step's compute: they keep up
#: with room to spare, even when the calibration (on a busy machine) overestimated the compute.
FIXED_DELIVERY_OVER_COMPUTE = 0.35
MIN_LOAD_MS = 20.0
MAX_FIXED_WORKERS = 8
FIXED_PREFETCH_FACTOR = 4


@dataclass(frozen=True)
class PhaseEnd:
    """When a phase ends: after ``seconds`` or ``steps`` (if given), whichever comes first."""

    seconds: float
    steps: int | None


class StopFlag:
    """Set by SIGTERM/SIGINT/SIGHUP, or once ``parent_pid`` is no longer our parent (``--parent-pid``).

    The parent's pid comes from the parent itself: if it died before we started, we were already
    re-parented, and asking for our parent at start-up would wait for the wrong one forever."""

    def __init__(self, parent_pid: int | None) -> None:
        self._event = threading.Event()
        self._parent_pid = parent_pid

    def install(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, lambda *_: self._event.set())

    def is_set(self) -> bool:
        if self._parent_pid is not None and os.getppid() != self._parent_pid:
            self._event.set()  # orphaned: nobody will ever stop us or look at us
        return self._event.is_set()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m xfertop.launch.demo_job",
        description="A training job that starves, then fixes itself live.",
    )
    parser.add_argument(
        "--phase-seconds",
        type=float,
        default=15.0,
        help="how long the starved phase runs before the fix (and the fixed phase, "
        "with --once-fixed); default 15",
    )
    parser.add_argument(
        "--phase-steps",
        type=int,
        default=None,
        help="end each phase after this many steps if that comes before --phase-seconds",
    )
    parser.add_argument(
        "--device", default="auto", help="auto (cuda when available, else cpu), cpu, cuda, cuda:N"
    )
    parser.add_argument(
        "--once-fixed",
        action="store_true",
        help="exit after one fixed phase instead of running until stopped",
    )
    parser.add_argument(
        "--parent-pid",
        type=int,
        default=None,
        help="exit when process PARENT_PID is no longer this one's parent (it died)",
    )
    return parser.parse_args(argv)


def quiet_known_warnings() -> None:
    """The demo's log should say what the demo does, not repeat torch's start-up chatter."""
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    # On a 1-core box the 2 workers are one more than the cores: torch would say so at every epoch.
    warnings.filterwarnings("ignore", message="This DataLoader will create")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    quiet_known_warnings()
    stop = StopFlag(args.parent_pid)
    stop.install()
    starved_end = PhaseEnd(args.phase_seconds, args.phase_steps)
    fixed_end = starved_end if args.once_fixed else PhaseEnd(float("inf"), None)
    try:
        import torch  # noqa: F401 - only to learn whether the real job can run
    except ImportError:
        print(
            "xfertop demo: torch is not installed, so this is a pure-Python simulation of a training loop.",
            flush=True,
        )
        from xfertop.launch.demo_simulated import run_simulated

        run_simulated(starved_end, fixed_end, stop)
        return 0
    from xfertop.launch.demo_torch import run_torch

    run_torch(args.device, starved_end, fixed_end, stop)
    return 0


class PhaseClock:
    """Counts a phase's steps against its end."""

    def __init__(self, end: PhaseEnd) -> None:
        self._deadline = time.monotonic() + end.seconds
        self._max_steps = end.steps
        self.steps = 0

    def step_done(self) -> bool:
        """Count one step; True when the phase is over."""
        self.steps += 1
        if self._max_steps is not None and self.steps >= self._max_steps:
            return True
        return time.monotonic() >= self._deadline


def announce(line: str) -> None:
    """One short line per phase change; the demo is otherwise silent (its log is a file, not the TUI)."""
    print(f"xfertop demo job (pid {os.getpid()}): {line}", flush=True)


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def worker_count(load_ms: float, compute_ms: float, cores: int | None = None) -> int:
    """Workers that together deliver a batch in FIXED_DELIVERY_OVER_COMPUTE of a step's compute, but no
    more than the cores this process may use (at least 2): the viewer's own advice says more workers
    than cores make things worse, and the demo must not contradict it."""
    wanted = load_ms / max(compute_ms * FIXED_DELIVERY_OVER_COMPUTE, 1e-3)
    cap = max(2, min(MAX_FIXED_WORKERS, usable_cores() if cores is None else cores))
    return max(2, min(cap, int(wanted) + 1))


def fixed_load_ms(load_ms: float, compute_ms: float, workers: int) -> float:
    """A batch's load time in the fixed phase: the starved phase's, unless the workers (capped at the
    cores) could not keep up with it; then storage reads ahead (a page-cache hit), as fast as those
    workers need to deliver a batch in FIXED_DELIVERY_OVER_COMPUTE of a step's compute."""
    return min(load_ms, workers * compute_ms * FIXED_DELIVERY_OVER_COMPUTE)


if __name__ == "__main__":
    sys.exit(main())
