#!/usr/bin/env bash
# Session 34's first GPU call: session 33's call3.sh (the CUDA tests of the optimizer-device check and
# the empty_cache wrapper, the user job plain and under `xfertop run`, trials j85/j84/j86), then
# layers.py (which layer of `xfertop run` holds its cost per step on CUDA). Run from the repository root
# with .whl carried; logs land in $OUT.
set -u
bash docs/measurements/h100-2026-12-05-s33/call3.sh
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 XFERTOP_DIR=/tmp/layers-rings
timeout 120 python3 docs/measurements/h100-2026-12-06-s34/layers.py 5000 cuda 3 > "$OUT/layers.txt" 2>&1
echo "layers rc=$? at ${SECONDS}s"; cat "$OUT/layers.txt" | grep -v Warn
# The view on a busy GPU: main-thread CPU by part, frames a second, threads (view_prof/).
python3 -m xfertop.launch.demo_job --phase-seconds 600 --device cuda > /dev/null 2>&1 &
DJ=$!; sleep 8
timeout 90 python3 docs/measurements/h100-2026-12-06-s34/view_prof/run_view.py 38 "$OUT/view_prof.json" > /dev/null 2>&1
echo "view_prof rc=$? at ${SECONDS}s"; kill $DJ; cat "$OUT/view_prof.json" | tr -d '\n '; echo; cat "$OUT/view_prof.json.threads" | tr -d '\n '
