"""Scenario h's main-process py-spy samples (call d's raw stacks), per line of its loop and per xfertop
frame of the reporter's own (leaf frames that are not the wrapped call itself), in ms or us a step.

    python docs/measurements/h200-2026-12-03-s19/loop_lines.py docs/measurements/h200-2026-12-03-s19/call_d
"""

import collections
import gzip
import sys
from pathlib import Path

#: Wrapper lines that call the wrapped torch function: their samples are the job's (the copy, the sync,
#: backward, next()), not the reporter's.
CALLS_ORIGINAL = (
    "_step_parts.py:113)",
    "_step_parts.py:123)",
    "_step_parts.py:125)",
    "_timed_copies.py:57)",
    "__init__.py:178)",
    "autopatch.py:73)",
)
LOOP_LINES = range(47, 67)  # sync_every_step.py's `for x, y in ...` to the end of its body
PERIOD_MS = 5.0  # py-spy --rate 200


def main() -> None:
    folder = Path(sys.argv[1])
    for mode in ("plain", "run", "nocopy"):
        result = (folder / f"h-{mode}.out").read_text()
        steps = int(result.split("steps=")[1].split()[0])
        lines, ours = collections.Counter(), collections.Counter()
        with gzip.open(folder / f"h-{mode}.txt.gz", "rt") as stacks:
            raws = stacks.read().splitlines()
        for raw in raws:
            stack, _, count = raw.rpartition(" ")
            frames = stack.split(";")
            mains = [f for f in frames if f.startswith("main (sync_every_step.py")]
            if not mains or any("_worker_loop" in f or "_pin_memory_loop" in f for f in frames):
                continue  # not the training process's main thread (workers are forked from inside main)
            line = int(mains[-1].rsplit(":", 1)[1].rstrip(")"))
            if line not in LOOP_LINES:
                continue
            lines[line] += int(count)
            if "xfertop/" in frames[-1] and not frames[-1].endswith(CALLS_ORIGINAL):
                ours[frames[-1].split(" (")[1].rstrip(")")] += int(count)
        per_step = {line: round(n * PERIOD_MS / steps, 3) for line, n in sorted(lines.items()) if n >= 20}
        print(f"== {mode}: {steps} steps, loop {sum(lines.values()) * PERIOD_MS / steps:.3f} ms/step")
        print(f"   by line (ms/step): {per_step}")
        print(f"   xfertop's own frames: {sum(ours.values()) * PERIOD_MS * 1000 / steps:.0f} us/step")
        for where, n in ours.most_common(4):
            print(f"     {n * PERIOD_MS * 1000 / steps:6.1f} us/step {where}")


if __name__ == "__main__":
    main()
