"""``--cores``: run a benchmark, and every process it starts, on a fixed set of CPU cores.

On the H100 of session 35, scenario h's samples/s moved 4.7% between plain processes pinned to the same
four cores (``taskset -c 4-7``) where session 27's unpinned ones moved 16%, and `xfertop run`'s cost per
layer agreed within a few us between rounds where unpinned rounds moved 20-30 us
(docs/measurements/h100-2026-12-06-s35/). The scheduler's placement of a whole process (which cores,
which caches, which neighbours) varies more than the few percent these benchmarks resolve.
"""

from __future__ import annotations

import argparse
import os


def parse_cores(spec: str) -> set[int]:
    """``"4-7,9"`` -> {4, 5, 6, 7, 9}, as taskset -c reads it."""
    cores: set[int] = set()
    for part in spec.split(","):
        first, _, last = part.strip().partition("-")
        if not first.isdigit() or (last and not last.isdigit()):
            raise argparse.ArgumentTypeError(f"{spec!r}: cores are numbers and ranges, e.g. 4-7,9")
        cores.update(range(int(first), int(last or first) + 1))
    return cores


def add_cores_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cores",
        type=parse_cores,
        help="run on these CPU cores only, as taskset -c (e.g. 4-7); the processes started inherit them",
    )


def pin(cores: set[int] | None) -> None:
    """This process, and so every process it starts from now on, on ``cores`` (None: left as it is)."""
    if cores:
        try:
            os.sched_setaffinity(0, cores)
        except OSError as exc:  # a core this machine (or this cgroup) does not have
            raise SystemExit(f"--cores {sorted(cores)}: {exc.strerror}") from None
