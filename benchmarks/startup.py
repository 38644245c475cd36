"""Time to first frame: xfertop vs nvitop, each started in a 160x48 pseudo-terminal.

"First frame" is the moment the terminal has received at least --min-visible-chars printable
characters (escape sequences removed): the same rule for both tools, so neither gets credit for
clearing the screen. Each tool runs --runs times; medians are compared.

    python benchmarks/startup.py --runs 7 --out benchmarks/results
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pty_run import PtyProcess

ESCAPES = re.compile(rb"\x1b(\[[0-9;?<>=]*[ -/]*[@-~]|\][^\x07]*\x07|[()][A-Za-z0-9]|[=>78cDEHM])")


def visible_chars(output: bytes) -> int:
    return sum(1 for byte in ESCAPES.sub(b"", output) if byte > 0x20)


def time_to_first_frame(
    argv: list[str], min_visible_chars: int, timeout_s: float, columns: int, rows: int
) -> float | None:
    process = PtyProcess(argv, columns=columns, rows=rows)
    try:
        deadline = process.started_s + timeout_s
        while visible_chars(bytes(process.output)) < min_visible_chars:
            if time.perf_counter() > deadline or process.process.poll() is not None:
                return None
            process.read_for(0.005)
        first_frame_s = time.perf_counter() - process.started_s
        process.send(b"q")
        process.wait(5.0)
        return first_frame_s
    finally:
        process.close()


def tools(include_nvitop: bool) -> dict[str, list[str]]:
    found = {"xfertop": [sys.executable, "-m", "xfertop"]}
    nvitop = shutil.which("nvitop")
    if include_nvitop and nvitop:
        found["nvitop"] = [nvitop]
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--min-visible-chars", type=int, default=200)
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds before a run counts as failed")
    parser.add_argument("--size", default="160x48", help="terminal COLUMNSxROWS")
    parser.add_argument("--no-nvitop", action="store_true", help="time xfertop only")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args()
    columns, rows = (int(part) for part in args.size.split("x"))
    results: dict[str, dict] = {}
    for name, argv in tools(not args.no_nvitop).items():
        times = [
            time_to_first_frame(argv, args.min_visible_chars, args.timeout, columns, rows)
            for _ in range(args.runs)
        ]
        ok = [t for t in times if t is not None]
        results[name] = {
            "argv": argv,
            "first_frame_s": times,
            "failed_runs": len(times) - len(ok),
            "median_s": statistics.median(ok) if ok else None,
        }
        print(f"{name:8s} first frame median {results[name]['median_s']} s  runs {times}")
    if "nvitop" not in results:
        print("nvitop not found on PATH (or --no-nvitop): no side-by-side figure")
    elif results["xfertop"]["median_s"] and results["nvitop"]["median_s"]:
        ratio = results["xfertop"]["median_s"] / results["nvitop"]["median_s"]
        results["ratio_xfertop_over_nvitop"] = ratio
        print(f"xfertop / nvitop first-frame time: {ratio:.2f}")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"startup-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(
        json.dumps(
            {"size": args.size, "min_visible_chars": args.min_visible_chars, "results": results}, indent=2
        )
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
