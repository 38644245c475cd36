#!/usr/bin/env bash
# Plain against `xfertop run`, by turns, for the reporter's cost: samples/s of each.
#   bash docs/measurements/h200-2026-12-02-s8/run_ab.sh SECONDS ROUNDS JOB...
set -u
secs=${1:?}; rounds=${2:?}; shift 2
here=docs/measurements/h200-2026-12-02-s8/jobs
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 XFERTOP_DIR=/tmp/xf-ab
for job in "$@"; do
  for r in $(seq "$rounds"); do
    p=$(timeout 120 python3 $here/gpu_jobs.py "$job" --seconds "$secs" 2>&1 | grep ^result)
    x=$(timeout 120 python3 -m xfertop run -- python3 $here/gpu_jobs.py "$job" --seconds "$secs" 2>&1 | grep -E "^result|last verdict|where the time")
    echo "$job round $r plain: $p"; echo "$job round $r run:   $x"
  done
done 2>&1 | tee "$OUT/ab.txt"
