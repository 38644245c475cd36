"""A job's samples/s plain and under `xfertop run`, in alternating pairs: what the reporter costs a whole job.

One plain and one instrumented process of the same command make a pair; the order flips from pair to pair
(plain first, then run first) so that a drift of the machine falls on both alike. On the H200 the speed of
a whole process varies by more than the 2% to resolve: the part of scenario h's step that no xfertop code
runs in moved 13% between five processes (docs/measurements/h200-2026-12-04-s24/). One pair says little;
the median of the pairs' ratios, and their spread, is the figure.

    python benchmarks/plain_vs_run.py --pairs 3 [--json OUT] [--cores 4-7] \
        -- python benchmarks/scenarios/sync_every_step.py --seconds 30

``--cores`` pins every process to the same cores (benchmarks/cores.py): pinned, plain's own spread fell
from 16% to 4.7% on the H100 (docs/measurements/h100-2026-12-06-s35/). ``--warmup N`` runs the plain
command N times first and keeps nothing of them: on the H200 a fresh machine's plain samples/s rose ~40%
over its first nine minutes (docs/measurements/h100-2026-12-06-s36/), which a pair's order then carried.
Beside the median, ``by_order`` gives the geometric mean of the ratios of each order and
``order_balanced`` the geometric mean of those two: a drift that favours whichever runs second weighs
on both orders alike and cancels there.

The command must print a line with ``samples_per_s=N`` (the corpus's scenarios print one as their
``result`` line). `xfertop run` is given ``--no-summary``: the job's own cost, not the summary's.
It may exit with any code: every run's exit code is kept, and every run's stdout less the lines that
hold ``samples_per_s=``; ``same_exit_code`` and ``same_output`` say whether all runs, plain and
instrumented, agree (a deterministic job, e.g. benchmarks/epochs_job.py, must: xfertop never changes
what a job does).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from typing import Any

from cores import add_cores_argument, pin
from score_scenarios import samples_per_s as rate_in_line  # the corpus's reading of a result line


def run_once(command: list[str]) -> tuple[float, int, list[str]]:
    """One process: its samples/s, exit code, and stdout less the lines holding its rate."""
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    rates: list[float] = []
    kept: list[str] = []
    for line in done.stdout.splitlines():
        rate = rate_in_line(line)
        if rate is None:
            kept.append(line)
        else:
            rates.append(rate)
    if not rates:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise SystemExit(f"plain_vs_run: {command[0]} exited {done.returncode} with no samples_per_s: {tail}")
    return rates[-1], done.returncode, kept


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--json", help="also write the result here")
    parser.add_argument("--warmup", type=int, default=0, help="plain runs first, not counted")
    add_cores_argument(parser)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the job's command")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command or args.pairs < 1:
        parser.error("give --pairs >= 1 and a command after --")
    pin(args.cores)
    for index in range(args.warmup):
        print(f"warm-up {index + 1}: plain {run_once(command)[0]:,.1f} samples/s (not counted)", flush=True)
    instrumented = [sys.executable, "-m", "xfertop.cli.run", "--no-summary", "--", *command]
    pairs: list[dict[str, Any]] = []
    outputs: dict[tuple[int, tuple[str, ...]], list[str]] = {}  # (exit code, stdout) -> the runs
    for index in range(args.pairs):
        order = ("plain", "run") if index % 2 == 0 else ("run", "plain")
        rates: dict[str, float] = {}
        for mode in order:
            rates[mode], code, lines = run_once(command if mode == "plain" else instrumented)
            outputs.setdefault((code, tuple(lines)), []).append(f"{mode} {index + 1}")
        pair = {"order": list(order), **rates, "ratio": rates["run"] / rates["plain"]}
        pairs.append(pair)
        print(
            f"pair {index + 1}: plain {rates['plain']:,.1f}, run {rates['run']:,.1f} samples/s:"
            f" run/plain {pair['ratio']:.4f} ({order[0]} first)",
            flush=True,
        )
    ratios = [p["ratio"] for p in pairs]
    by_order = {
        first: statistics.geometric_mean(mine)
        for first in ("plain", "run")
        if (mine := [p["ratio"] for p in pairs if p["order"][0] == first])
    }
    result = {
        "command": command,
        "pairs": pairs,
        "median_ratio": statistics.median(ratios),
        "min_ratio": min(ratios),
        "max_ratio": max(ratios),
        "by_order": by_order,
        "order_balanced": statistics.geometric_mean(by_order.values()) if len(by_order) == 2 else None,
        "exit_codes": sorted({code for code, _ in outputs}),
        "same_exit_code": len({code for code, _ in outputs}) == 1,
        "same_output": len(outputs) == 1,
        "outputs": [
            {"runs": runs, "exit_code": code, "stdout": list(lines)}
            for (code, lines), runs in outputs.items()
        ],
    }
    print(
        f"run/plain: median {result['median_ratio']:.4f} over {len(ratios)} pairs"
        f" (min {result['min_ratio']:.4f}, max {result['max_ratio']:.4f})"
    )
    orders = ", ".join(f"{first} first {mean:.4f}" for first, mean in by_order.items())
    balanced = result["order_balanced"]
    print(f"geometric means: {orders}" + (f"; order-balanced {balanced:.4f}" if balanced else ""))
    groups = "; ".join(
        f"exit {code}, {len(lines)} lines: {', '.join(runs)}" for (code, lines), runs in outputs.items()
    )
    print(f"exit codes {result['exit_codes']}; same output in every run: {result['same_output']} ({groups})")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
