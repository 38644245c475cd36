"""The A/B harness of the *_cost benchmarks: the same code in several checkouts at once, CPU per call.

``run_in_trees`` starts one Python subprocess per checkout, all at the same time, each importing xfertop
from its own ``src`` (``PYTHONPATH=<tree>/src``, then this folder, so that the code can use
``timed_calls``). Each gets the caller's arguments plus, last, the monotonic time of its first sample:
tree ``i`` starts ``i / len(trees)`` of a period after tree 0, so the trees take turns within each
period rather than read the same files at the same moment. Each must print one JSON object with
``module`` (``xfertop.__file__``, checked to lie in its tree) and ``costs`` (CPU seconds per call);
anything else in it is the caller's.

``print_costs`` prints mean / median / p90 / max per tree in ms; ``print_ratios`` prints the mean and
median ratios ``<reference> / <other>``, where each benchmark keeps the reference it has always used
(the first ``--tree``, i.e. the baseline, or the last tree, i.e. this checkout); ``print_agreement``
prints whether every tree reported the same facts.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

HERE = Path(__file__).resolve().parent

Result = dict[str, Any]
T = TypeVar("T")


def timed_calls(
    call: Callable[[], T], samples: int, rate_hz: float, first_at: float
) -> Iterator[tuple[float, T]]:
    """Call ``call`` ``samples`` times, one period of ``rate_hz`` apart from ``first_at`` (monotonic) on,
    and yield the CPU seconds each call took (``time.thread_time``: user + system of this thread, so the
    kernel's work counts and sleeps do not) with what it returned."""
    next_at = first_at
    for _ in range(samples):
        next_at += 1.0 / rate_hz
        time.sleep(max(0.0, next_at - time.monotonic()))
        before = time.thread_time()
        returned = call()
        yield time.thread_time() - before, returned


def run_in_trees(
    name: str,
    code: str,
    trees: Sequence[Path],
    args: Sequence[str],
    rate_hz: float,
    start_delay_s: float,
    role: str = "sampler",
) -> list[Result]:
    """Run ``code`` once per tree, taking turns at ``rate_hz``, and return each tree's JSON, in order.

    The first sample is ``start_delay_s`` from now (time for every subprocess's imports). Exits with
    "<name>: the <role> for <tree> failed" if a subprocess fails, and with a message if one imported
    xfertop from outside its tree.
    """
    first_at = time.monotonic() + start_delay_s
    turn_s = 1.0 / rate_hz / len(trees)
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", code, *args, str(first_at + i * turn_s)],
            env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree / "src"), str(HERE)])),
            stdout=subprocess.PIPE,
            text=True,
        )
        for i, tree in enumerate(trees)
    ]
    try:
        return [_result(name, role, tree, process) for tree, process in zip(trees, processes, strict=True)]
    finally:
        for process in processes:  # the ones still running when another failed
            if process.poll() is None:
                process.kill()
                process.wait()


def _result(name: str, role: str, tree: Path, process: subprocess.Popen[str]) -> Result:
    out, _ = process.communicate()
    if process.returncode != 0:
        raise SystemExit(f"{name}: the {role} for {tree} failed")
    result = json.loads(out)
    if not result["module"].startswith(str(tree / "src")):
        raise SystemExit(f"{name}: {tree} imported xfertop from {result['module']}")
    return result


def costs_ms(result: Result) -> list[float]:
    """The CPU of each call, in ms."""
    return [cost_s * 1e3 for cost_s in result["costs"]]


def print_agreement(
    trees: Sequence[Path],
    results: Sequence[Result],
    facts_described: str,
    facts: Callable[[Result], Any],
    shown: Callable[[Result], Any] | None = None,
) -> bool:
    """Print whether every tree reported the same ``facts`` ("same <facts_described> in every checkout:
    yes"); where not, each tree's ``shown`` (default: its facts) as JSON. Returns whether they agreed."""
    same = all(facts(result) == facts(results[0]) for result in results)
    print(f"same {facts_described} in every checkout:", "yes" if same else "NO")
    if not same:
        for tree, result in zip(trees, results, strict=True):
            print(tree, json.dumps((shown or facts)(result)))
    return same


def percentile(values: Sequence[float], fraction: float) -> float:
    """The value ``fraction`` of the way up the sorted values (no interpolation)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


@dataclass(frozen=True)
class Column:
    """A column ``print_costs`` adds after max: its title, width, and the text of a tree's cell."""

    title: str
    width: int
    cell: Callable[[Result], str]


def print_costs(
    trees: Sequence[Path], results: Sequence[Result], extra_columns: Sequence[Column] = ()
) -> None:
    """A table: one row per tree with mean / median / p90 / max CPU per call in ms, then the extra columns."""
    print(
        f"{'checkout':32s} {'mean':>8s} {'median':>8s} {'p90':>8s} {'max':>8s}",
        *(f"{column.title:>{column.width}s}" for column in extra_columns),
    )
    for tree, result in zip(trees, results, strict=True):
        costs = costs_ms(result)
        print(
            f"{tree!s:32s} {statistics.mean(costs):8.3f} {statistics.median(costs):8.3f} "
            f"{percentile(costs, 0.9):8.3f} {max(costs):8.3f}",
            *(f"{column.cell(result):>{column.width}s}" for column in extra_columns),
        )


def print_ratios(trees: Sequence[Path], results: Sequence[Result], reference: int) -> None:
    """Print "<reference tree> / <tree>: mean Rx, median Rx" for every other tree; ``reference`` is an
    index into ``trees`` (0: the first, -1: the last)."""
    reference %= len(trees)
    reference_costs = results[reference]["costs"]
    for index, (tree, result) in enumerate(zip(trees, results, strict=True)):
        if index == reference:
            continue
        mean_ratio = statistics.mean(reference_costs) / statistics.mean(result["costs"])
        median_ratio = statistics.median(reference_costs) / statistics.median(result["costs"])
        print(f"{trees[reference]} / {tree}: mean {mean_ratio:.2f}x, median {median_ratio:.2f}x")
