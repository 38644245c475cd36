"""Summarise a py-spy raw (folded) profile of copy_cost.py --spin: the loop's top frames by self
samples (per line) and by inclusive samples (per function).

    python fold.py prof.txt [N]
"""

import collections
import sys

path, top = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 25
own: collections.Counter[str] = collections.Counter()
inclusive: collections.Counter[str] = collections.Counter()
total = 0
with open(path) as lines:
    rows = [line.rstrip() for line in lines]
for line in rows:
    stack, _, count = line.rpartition(" ")
    if not stack:
        continue
    n = int(count)
    total += n
    frames = stack.split(";")
    if not any(frame.startswith("spin (") for frame in frames):
        continue  # imports and set-up: not the loop
    own[frames[-1]] += n
    for frame in {f.rpartition(":")[0] for f in frames}:  # per function: lines dropped
        inclusive[frame] += n
print(f"{path}: {total} samples")
print("-- self")
for frame, n in own.most_common(top):
    print(f"{n / total:6.1%} {frame[:150]}")
print("-- inclusive (xfertop and torch python frames)")
shown = 0
for frame, n in inclusive.most_common():
    if ("xfertop" in frame or "copy_cost" in frame or "torch/" in frame) and shown < top:
        print(f"{n / total:6.1%} {frame[:150]}")
        shown += 1
