#!/usr/bin/env bash
# Session 21's fourth GPU call: the sync-bound GPU test with its job's GPU work at 4 ms (was 2 ms: the
# H200 read it sync-bound in call b and loop-bound in call c, at the 10% bar), then scenario h plain and
# under `xfertop run --no-summary` alternating, PAIRS pairs of SECONDS_EACH (s19's call_c pattern), with
# the pinned memo in.
#   bash docs/measurements/h200-2026-12-03-s21/call_d.sh      (with .whl carried)
set -u
R=$OUT; export OUT=/tmp/o; mkdir -p $OUT
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > "$OUT/pip.txt" 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
for i in 1 2; do
  timeout 100 python3 -m pytest -q -m gpu -p no:cacheprovider \
    "tests/gpu/test_topology_and_sync_gpu.py::test_a_job_that_stalls_its_gpu_from_the_host_is_sync_bound" \
    > "$OUT/pytest_sync_$i.txt" 2>&1
  echo "sync test $i rc=$? $(tail -n 1 "$OUT/pytest_sync_$i.txt")"
done
for i in $(seq 1 "${PAIRS:-4}"); do
  order="plain run"; [ $((i % 2)) = 0 ] && order="run plain"
  for mode in $order; do
    pre=(); [ "$mode" = run ] && pre=(python3 -m xfertop run --no-summary --)
    timeout 60 "${pre[@]}" python3 benchmarks/scenarios/sync_every_step.py --seconds "${SECONDS_EACH:-15}" \
      > "$OUT/sync-$i-$mode.txt" 2>&1
    echo "pair $i $mode rc=$? $(grep -m1 '^result' "$OUT/sync-$i-$mode.txt")"
  done
done
tar czf $R/all.tgz -C /tmp o
