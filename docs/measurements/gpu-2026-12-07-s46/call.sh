#!/usr/bin/env bash
# Not run in session 46: no device machine could be started all session (docs/measurements/cpu-2026-12-07-s46/).
# It is the next call as written: the first line first (the reporter's GPU tests, session 45's periodic timing
# among them, and k).
# Session 46's device calls, from the repository root with .whl carried:
#   JOB=1 GPUTESTS=1 TOTAL=575 SCENARIOS=k,d,e,f,g,h bash docs/measurements/gpu-2026-12-07-s46/call.sh
#   TUI=1 TOTAL=575 SCENARIOS=n1,n2,o,o0 bash docs/measurements/gpu-2026-12-07-s46/call.sh
# TUI=1 first runs the live view beside nvitop (benchmarks/tui_cpu.py --together: each in its own 160x48
# terminal over the same seconds, the CUDA demo job as load started 20 s ahead; issue 22 item 2), 20 s after
# 3 s at 1 and 4 Hz, twice. The rest is session 44's call.sh (JOB: a real CUDA job plain and under `xfertop run`;
# GPUTESTS: the reporter's gpu tests; SCENARIOS scored in run, watch and attach with their truths), until
# TOTAL seconds from this script's start. Everything comes back as call.tgz, a few texts beside it.
set -u
if [ "${TUI:-0}" = 1 ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    > /dev/null 2>&1
  mkdir -p /tmp/o
  PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH timeout 170 python3 benchmarks/tui_cpu.py --together --repeat 2 \
    --rates-hz 1,4 --seconds 20 --warmup 3 --load-age 20 --out /tmp/o \
    --load "python3 -m xfertop.launch.demo_job --phase-seconds 900 --device cuda" > /tmp/o/tui_cpu.txt 2>&1
  echo "tui rc=$? at ${SECONDS}s"; tail -n 20 /tmp/o/tui_cpu.txt
  cp /tmp/o/tui_cpu.txt "$OUT/"
fi
TOTAL=$((${TOTAL:-575} - SECONDS)) bash docs/measurements/gpu-2026-12-07-s44/call.sh
