#!/usr/bin/env bash
# Session 38's second GPU call: the view beside nvitop and the session's starting tree (615a32a, unpacked
# by `git archive 615a32a src` into s38-before/, not committed), 20 s after 3 s at 1 and 4 Hz, the CUDA demo
# job as load; then the py-spy profile of the steady state again (as call 1). Logs in $OUT.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 300 python3 benchmarks/tui_cpu.py --seconds 20 --warmup 3 --before s38-before --out "$OUT" \
  --load "python3 -m xfertop.launch.demo_job --phase-seconds 600 --device cuda" > "$OUT/tui_cpu.txt" 2>&1
echo "tui_cpu rc=$? at ${SECONDS}s"; cat "$OUT/tui_cpu.txt"
OURS=1 timeout 250 python3 docs/measurements/cpu-2026-12-06-s38/thread_profile.py 160x48 130 45 --real --cuda --top 60 \
  -- --interval 1 > "$OUT/profile_1hz.txt" 2>&1
echo "profile rc=$? at ${SECONDS}s"; grep "^==" "$OUT/profile_1hz.txt"
