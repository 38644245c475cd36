#!/usr/bin/env bash
# Session 40's second GPU call (session 38's call3.sh, run as written): the view, session 38's starting
# `git archive 615a32a src`, not committed) and nvitop at once (tui_cpu.py --together: each in its own
# 160x48 terminal over the same seconds), the CUDA demo job as load, started 20 s ahead (--load-age):
# 20 s after 3 s at 1 and 4 Hz, then 30 s after 120 s at 1 Hz (the step strip's rows 5 s long by then),
# as far as the session's device time goes. Logs in $OUT.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
LOAD="python3 -m xfertop.launch.demo_job --phase-seconds 900 --device cuda"
timeout 130 python3 benchmarks/tui_cpu.py --together --rates-hz 1,4 --seconds 20 --warmup 3 --load-age 20 \
  --before s38-before --out "$OUT" --load "$LOAD" > "$OUT/tui_cpu_young.txt" 2>&1
echo "young rc=$? at ${SECONDS}s"; cat "$OUT/tui_cpu_young.txt"
timeout 230 python3 benchmarks/tui_cpu.py --together --rates-hz 1 --seconds 30 --warmup 120 --load-age 20 \
  --before s38-before --out "$OUT" --load "$LOAD" > "$OUT/tui_cpu_steady.txt" 2>&1
echo "steady rc=$? at ${SECONDS}s"; cat "$OUT/tui_cpu_steady.txt"
