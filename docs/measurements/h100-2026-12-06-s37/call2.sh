#!/usr/bin/env bash
# Session 37's second GPU call: issue 20's >= 0.98 for the sync-every-step scenario, every process on
# cores 4-7, after two plain warm-up runs (session 36's H200 sped up ~40% over its first minutes), with the
# order-balanced geometric mean beside the median. Logs in $OUT.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
timeout 570 python3 benchmarks/plain_vs_run.py --warmup 2 --pairs "${PAIRS:-3}" --cores 4-7 --json "$OUT/h_pairs.json" \
  -- python3 benchmarks/scenarios/sync_every_step.py --seconds 60 > "$OUT/h_pairs.txt" 2>&1
echo "pairs rc=$? at ${SECONDS}s"; cat "$OUT/h_pairs.txt"
