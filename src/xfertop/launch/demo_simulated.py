"""The demo job without torch: the same starved-then-fixed story, with sleeps standing in for work.

``with xfertop.step():`` brackets each step; the reporter counts the time between steps as data wait.
Phase 1 loads each batch in the loop itself; phase 2 has a thread pool (the "workers") load batches
ahead into a bounded queue, as a DataLoader's workers and prefetch_factor would.
"""

from __future__ import annotations

import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor

import xfertop
from xfertop.launch.demo_job import (
    FIXED_PREFETCH_FACTOR,
    STARVED_LOAD_OVER_COMPUTE,
    PhaseClock,
    PhaseEnd,
    StopFlag,
    announce,
    fixed_load_ms,
    worker_count,
)

COMPUTE_MS = 20.0
LOAD_MS = STARVED_LOAD_OVER_COMPUTE * COMPUTE_MS


def load_batch() -> int:
    return load_batch_in(LOAD_MS)


def load_batch_in(load_ms: float) -> int:
    time.sleep(load_ms / 1000.0)
    return 1


def compute() -> None:
    time.sleep(COMPUTE_MS / 1000.0)


def starved_phase(end: PhaseEnd, stop: StopFlag) -> bool:
    clock = PhaseClock(end)
    while True:
        load_batch()
        with xfertop.step():
            compute()
        if stop.is_set():
            return False
        if clock.step_done():
            return True


def fixed_phase(end: PhaseEnd, stop: StopFlag) -> bool:
    workers = worker_count(LOAD_MS, COMPUTE_MS)
    load_ms = fixed_load_ms(LOAD_MS, COMPUTE_MS, workers)
    read_ahead = f", storage read-ahead: a batch loads in {load_ms:.0f} ms" if load_ms < LOAD_MS else ""
    announce(
        f"phase 2, fixed: {workers} loader threads, {workers * FIXED_PREFETCH_FACTOR} batches ahead"
        f"{read_ahead}."
    )
    clock = PhaseClock(end)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="demo-loader") as pool:
        ahead: deque[Future[int]] = deque(
            pool.submit(load_batch_in, load_ms) for _ in range(workers * FIXED_PREFETCH_FACTOR)
        )
        while True:
            ahead.popleft().result()
            ahead.append(pool.submit(load_batch_in, load_ms))
            with xfertop.step():
                compute()
            if stop.is_set() or clock.step_done():
                for future in ahead:
                    future.cancel()
                return not stop.is_set()


def run_simulated(starved_end: PhaseEnd, fixed_end: PhaseEnd, stop: StopFlag) -> None:
    announce(
        f"simulated steps of {COMPUTE_MS:.0f} ms; phase 1, starved: each batch loads in the loop "
        f"({LOAD_MS:.0f} ms)."
    )
    if starved_phase(starved_end, stop) and fixed_phase(fixed_end, stop):
        announce("fixed phase over; exiting.")
