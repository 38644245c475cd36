#!/usr/bin/env bash
# Session 35's third GPU call: where `xfertop run`'s per-step cost on CUDA comes from (session 34's
# layers.py: plain, run's hooks in-process, + copy timing, `xfertop run --no-copy-timing`, `xfertop run`),
# every process on the same four cores (taskset), which brought the sync-every-step pairs' spread from
# 16% to 5% in call 2. Logs in $OUT.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 XFERTOP_DIR=/tmp/layers-rings
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git log -1 --format=%H 2>/dev/null; } > "$OUT/machine.txt" 2>&1
timeout ${LIMIT:-240} taskset -c "${CORES:-4-7}" python3 ${LAYERS:-docs/measurements/h100-2026-12-06-s34/layers.py} 5000 cuda "${ROUNDS:-5}" \
  > "$OUT/layers.txt" 2>&1
echo "layers rc=$? at ${SECONDS}s"; grep -v Warn "$OUT/layers.txt" | tail -n 6
