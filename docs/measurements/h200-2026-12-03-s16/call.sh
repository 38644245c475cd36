#!/usr/bin/env bash
# Session 16's GPU calls: session 15's call.sh (the corpus in run, watch and attach; see its header for
# SCENARIOS, MODES, PARALLEL, SECONDS_EACH, LIMIT) with two additions, run first:
#   BESIDE=1    scenario r alone, beside the live view and beside `xfertop --once` polls
#               (benchmarks/job_beside_viewer.py): is r's slowdown under polling the viewer's doing?
#   OVERHEAD=1  the reporter's per-step cost on this box (benchmarks/reporter_overhead.py --quick).
# Everything lands in $OUT; wrap the call so that $OUT is tarred into one file (the device tool returns
# a limited number of files).
set -u
here=docs/measurements/h200-2026-12-03-s16
if [ "${BESIDE:-0}" = 1 ] || [ "${OVERHEAD:-0}" = 1 ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    > "$OUT/pip0.txt" 2>&1
  export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
fi
if [ "${BESIDE:-0}" = 1 ]; then
  python3 benchmarks/job_beside_viewer.py --scenario loop_augment.py --seconds 12 --rounds 2 \
    --json "$OUT/beside_r.json" > "$OUT/beside_r.txt" 2>&1
  echo "beside rc=$?"; tail -n 8 "$OUT/beside_r.txt"
fi
if [ "${OVERHEAD:-0}" = 1 ]; then
  python3 benchmarks/reporter_overhead.py --quick "$OUT/overhead" > "$OUT/overhead.txt" 2>&1
  echo "overhead rc=$?"; tail -n 15 "$OUT/overhead.txt"
fi
[ -n "${SCENARIOS:-}${USERJOB:-}${SYNC60:-}${RDUMP:-}" ] && bash "${here%-s16}-s15/call.sh"
exit 0
