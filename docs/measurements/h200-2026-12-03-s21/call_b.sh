#!/usr/bin/env bash
# Session 21's second GPU call, after the pinned memo (copy timing asks is_pinned() once per buffer a
# second): the GPU tests, then sync_job_phases.py plain and under `run` alternating (ROUNDS pairs, the
# order flipped each pair), then the reporter's per-step cost (reporter_overhead.py --quick).
#   bash docs/measurements/h200-2026-12-03-s21/call_b.sh      (with .whl carried)
set -u
R=$OUT; export OUT=/tmp/o; mkdir -p $OUT
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > "$OUT/pip.txt" 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
python3 -c "import pytest" 2>/dev/null || echo "no pytest on the box"
timeout "${TESTS_S:-260}" python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu > "$OUT/pytest_gpu.txt" 2>&1
echo "gpu tests rc=$?"; tail -n 4 "$OUT/pytest_gpu.txt"
for i in $(seq 1 "${ROUNDS:-4}"); do
  order="plain run"; [ $((i % 2)) = 0 ] && order="run plain"
  for mode in $order; do
    pre=(); [ "$mode" = run ] && pre=(python3 -m xfertop run --no-summary --)
    timeout 60 "${pre[@]}" python3 benchmarks/sync_job_phases.py --seconds "${SECONDS_EACH:-10}" \
      > "$OUT/phases-$i-$mode.txt" 2>&1
    echo "pair $i $mode rc=$? $(grep -m1 -o '"samples_per_s": [0-9.]*' "$OUT/phases-$i-$mode.txt")"
  done
done
timeout 150 python3 benchmarks/reporter_overhead.py --quick "$OUT/overhead" > "$OUT/overhead.txt" 2>&1
echo "overhead rc=$?"; grep -E "xfertop_run|is_pinned|to_cuda" "$OUT/overhead.txt"
tar czf $R/all.tgz -C /tmp o
