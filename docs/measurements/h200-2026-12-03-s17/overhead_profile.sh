#!/usr/bin/env bash
# Where `xfertop run`'s copy timing spends on a CUDA job (issue 20: <= 10 us a step; session 11 measured
# +29.65 us with copy timing against +10.73 without, on the H200 only: +1.5 us on the CPU VM).
# benchmarks/reporter_overhead.py's DataLoader child (one pageable .to(cuda) and one add_ a step), 60,000
# steps under `xfertop run` with and without copy timing, each sampled by py-spy at 997 Hz (raw stacks).
# Run from the repository root with .whl carried; $OUT receives the stacks and the per-step figures.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > "$OUT/pip_profile.txt" 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
child=/tmp/overhead_child.py
python3 -c "import sys; sys.path.insert(0, 'benchmarks'); import reporter_overhead as r; print(r.CHILD)" > "$child"
for mode in copy-timing no-copy-timing direct; do
  case $mode in
    copy-timing) pre=(python3 -m xfertop run --no-summary --) ;;
    no-copy-timing) pre=(python3 -m xfertop run --no-summary --no-copy-timing --) ;;
    direct) pre=() ;;
  esac
  py-spy record --subprocesses --rate 997 --format raw --nonblocking -o "$OUT/stacks-$mode.txt" -- \
    "${pre[@]}" python3 "$child" 20000 "${DEVICE:-cuda}" > "$OUT/child-$mode.txt" 2> "$OUT/pyspy-$mode.txt"
  echo "$mode rc=$? $(grep -h ns_per_step "$OUT/child-$mode.txt")"
done
# The share of the loop's samples whose innermost Python frame is xfertop's, by line.
python3 - "$OUT" <<'PY'
import collections, sys
from pathlib import Path
for mode in ("copy-timing", "no-copy-timing"):
    path = Path(sys.argv[1]) / f"stacks-{mode}.txt"
    if not path.exists():
        continue
    total, where = 0, collections.Counter()
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if "overhead_child.py" not in stack:  # the launcher and py-spy's own start: not the job's loop
            continue
        total += int(count)
        leaf = stack.split(";")[-1]  # xfertop's own lines, and the C calls they make (is_pinned, events)
        where[leaf if "xfertop/" in leaf else "(elsewhere: the job, torch, the DataLoader)"] += int(count)
    print(f"== {mode}: {total} samples")
    for name, count in where.most_common(15):
        print(f"{100 * count / total:6.1f}% {name}")
PY
