#!/usr/bin/env bash
# Session 19's third GPU call (~6 min): is a sync-every-step job (scenario h) >= 0.98 of its plain
# samples/s under `xfertop run`? Single 60 s pairs read 0.993, 0.944, 0.997 and 0.885 (call a), the plain
# runs alone spreading 35.4k-37.8k: one pair cannot tell. Here plain and run alternate, PAIRS times
# SECONDS each (order flipped every pair), then the copy path's pieces (reporter_overhead.py --quick).
set -u
R=$OUT; export OUT=/tmp/o; mkdir -p $OUT
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > "$OUT/pip.txt" 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
python3 benchmarks/reporter_overhead.py --quick "$OUT/overhead" > "$OUT/overhead.txt" 2>&1
echo "overhead rc=$?"; grep -E "cuda_event_costs|xfertop_run" "$OUT/overhead.txt"
for i in $(seq 1 "${PAIRS:-4}"); do
  order="plain run"; [ $((i % 2)) = 0 ] && order="run plain"
  for mode in $order; do
    pre=(); [ "$mode" = run ] && pre=(python3 -m xfertop run --no-summary --)
    "${pre[@]}" python3 benchmarks/scenarios/sync_every_step.py --seconds "${SECONDS_EACH:-20}" \
      > "$OUT/sync-$i-$mode.txt" 2>&1
    echo "pair $i $mode rc=$? $(grep -m1 '^result' "$OUT/sync-$i-$mode.txt")"
  done
done
tar czf $R/all.tgz -C /tmp o
