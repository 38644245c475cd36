#!/usr/bin/env bash
# Session 19's fourth GPU call (~2 min): where does scenario h (sync every step) lose ~7% of its
# samples/s under `xfertop run` (call c: 0.87-0.99 a pair, median of ratios 0.93)? The reporter's own
# per-step cost (~20-40 us) is a tenth of that (~0.46 ms of a 6.6 ms step). h plain, under `run`, and
# under `run --no-copy-timing`, each sampled by py-spy (with idle frames) for SECONDS; then the main
# thread's samples by innermost frame and by xfertop frame anywhere in the stack (inclusive).
set -u
R=$OUT; export OUT=/tmp/o; mkdir -p $OUT
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > "$OUT/pip.txt" 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
for mode in plain run nocopy; do
  case $mode in
    plain) pre=() ;;
    run) pre=(python3 -m xfertop run --no-summary --) ;;
    nocopy) pre=(python3 -m xfertop run --no-summary --no-copy-timing --) ;;
  esac
  py-spy record --idle --subprocesses --rate 200 --format raw --nonblocking -o "$OUT/h-$mode.txt" -- \
    "${pre[@]}" python3 benchmarks/scenarios/sync_every_step.py --seconds "${SECONDS_EACH:-20}" \
    > "$OUT/h-$mode.out" 2> "$OUT/h-$mode.err"
  echo "$mode rc=$? $(grep -m1 '^result' "$OUT/h-$mode.out")"
done
python3 - "$OUT" <<'PY'
import collections, sys
from pathlib import Path
for mode in ("plain", "run", "nocopy"):
    path = Path(sys.argv[1]) / f"h-{mode}.txt"
    if not path.exists():
        continue
    total, leaf, ours = 0, collections.Counter(), collections.Counter()
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        if not any("main (sync_every_step.py" in f for f in frames):
            continue  # DataLoader workers, the pin-memory thread, the launcher
        n = int(count)
        total += n
        leaf[frames[-1]] += n
        for f in dict.fromkeys(f for f in frames if "xfertop/" in f or "torch/" in f):
            ours[f] += n
    print(f"== {mode}: {total} main-thread samples")
    for name, n in leaf.most_common(12):
        print(f"  leaf {100 * n / total:5.1f}% {name}")
    for name, n in ours.most_common(14):
        print(f"  incl {100 * n / total:5.1f}% {name}")
PY
tar czf $R/all.tgz -C /tmp o
