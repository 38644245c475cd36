#!/usr/bin/env bash
# Session 40's fourth GPU call (the session's last 265 s of device time, ~90 of them the start): (1) call 1's epochs job again, pairs after a plain warm-up run and with
# every process on cores 0-7 (benchmarks/cores.py), to tell call 1's one pair at 0.90 from the machine's
# drift (its plain runs moved 703 -> 940 samples/s); (2) where the view's terminal output goes, row by row
# (docs/measurements/cpu-2026-12-06-s40/bytes_by_row.py, real NVML, the CUDA demo job): call 2's xfertop
# wrote 17.7 KB a second at 1 Hz in steady state where nvitop wrote 2.1. Logs in $OUT.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 120 python3 benchmarks/plain_vs_run.py --pairs 2 --warmup 1 --cores 0-7 --json "$OUT/epochs_pairs.json" \
  -- python3 benchmarks/epochs_job.py --epochs 5 --exit-code 3 > "$OUT/epochs_pairs.txt" 2>&1
echo "epochs rc=$? at ${SECONDS}s"; cat "$OUT/epochs_pairs.txt"
timeout 55 python3 docs/measurements/cpu-2026-12-06-s40/bytes_by_row.py 30 15 --real --cuda > "$OUT/bytes_by_row.txt" 2>&1
echo "bytes rc=$? at ${SECONDS}s"; cat "$OUT/bytes_by_row.txt"
