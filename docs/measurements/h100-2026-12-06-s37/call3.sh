#!/usr/bin/env bash
# Session 37's third GPU call: the view's CPU per thread on the real GPU at 1 Hz (15 s in, and 130 s in,
# its strip's rows 5 s long by then), then two more pinned pairs of the sync-every-step scenario. Logs in $OUT.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for warm in 15 130; do
  timeout 200 python3 docs/measurements/cpu-2026-12-06-s37/thread_cpu.py 160x48 $warm 20 --load --real --cuda \
    -- --interval 1 > "$OUT/threads_$warm.txt" 2>&1
  echo "threads warmup $warm rc=$? at ${SECONDS}s"; cat "$OUT/threads_$warm.txt"
done
left=$((585 - SECONDS))
timeout $left python3 benchmarks/plain_vs_run.py --pairs 2 --cores 4-7 --json "$OUT/h_pairs.json" \
  -- python3 benchmarks/scenarios/sync_every_step.py --seconds 60 > "$OUT/h_pairs.txt" 2>&1
echo "pairs rc=$? at ${SECONDS}s"; cat "$OUT/h_pairs.txt"
