#!/usr/bin/env bash
# Session 38's first GPU call: where each of the view's threads spends its CPU on the real GPU in steady
# state (1 Hz, 160x48, the CUDA demo job, py-spy at 1 kHz from 130 s for 45 s). Logs in $OUT.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
OURS=1 timeout 300 python3 docs/measurements/cpu-2026-12-06-s38/thread_profile.py 160x48 130 45 --real --cuda --top 60 \
  -- --interval 1 > "$OUT/profile_1hz.txt" 2>&1
echo "profile rc=$? at ${SECONDS}s"; grep "^==" "$OUT/profile_1hz.txt"
