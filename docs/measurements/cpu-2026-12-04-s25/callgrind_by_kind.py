"""Where the instructions `run` adds go, by kind of C function: callgrind dumps kept by
``benchmarks/reporter_instructions.py --modes plain,run --keep DIR`` (runs of 100 and 300 steps), each
function's cost over the 200 steps between them, `run` minus `plain`.

    python docs/measurements/cpu-2026-12-04-s25/callgrind_by_kind.py DIR [run]
"""

import collections
import re
import subprocess
import sys

KINDS = (  # the first that matches names the function's kind
    ("interpreter loop", r"ceval|_PyEval_EvalFrameDefault"),
    ("glibc malloc", r"malloc/malloc\.c"),
    ("objects: allocation, freeing, GC", r"obmalloc|dealloc|_New\b|alloc|Trash|GC_|gcmodule|NewReference|_keys"),
    ("frames", r"frame\.c|pycore_frame|Frame|initialize_locals"),
    ("int arithmetic", r"longobject"),
    ("calls, dicts, tuples, lists", r"dictobject|call\.c|tupleobject|listobject"),
    ("torch's C++", r"\?\?\?"),
    ("attribute lookup", r"typeobject|object\.c|descrobject"),
)


def costs(path: str) -> collections.Counter:
    out = subprocess.run(["callgrind_annotate", "--threshold=100", path], capture_output=True, text=True).stdout
    found: collections.Counter = collections.Counter()
    for line in out.splitlines():
        match = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*)$", line)
        if match and ":" in match.group(2):
            found[match.group(2).split(" [")[0]] += int(match.group(1).replace(",", ""))
    return found


def per_step(directory: str, mode: str) -> dict[str, float]:
    low, high = costs(f"{directory}/callgrind.{mode}.out.1"), costs(f"{directory}/callgrind.{mode}.out.2")
    return {name: (high[name] - low[name]) / 200 for name in set(low) | set(high)}


directory, mode = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "run"
plain, measured = per_step(directory, "plain"), per_step(directory, mode)
added = {name: measured.get(name, 0.0) - plain.get(name, 0.0) for name in set(plain) | set(measured)}
by_kind: collections.Counter = collections.Counter()
for name, value in added.items():
    by_kind[next((kind for kind, pattern in KINDS if re.search(pattern, name)), "other")] += value
total = sum(added.values())
print(f"{mode} adds {total:,.0f} instructions a step")
for kind, value in by_kind.most_common():
    print(f"  {kind:34} {value:9,.0f}  {value / total:6.1%}")
