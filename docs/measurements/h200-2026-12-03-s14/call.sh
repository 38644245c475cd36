#!/usr/bin/env bash
# Session 14's GPU calls: the whole corpus in run, watch and attach at one commit (issue 20 item 8),
# split over calls that each fit the device tool's 600 s. Run from the repository root with .whl carried:
#   SCENARIOS=a,b,c PARALLEL=4 SECONDS_EACH=6 bash docs/measurements/h200-2026-12-03-s14/call.sh
# PARALLEL: host-bound scenarios at once (the scorer runs GPU-bound ones alone on one GPU).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > "$OUT/pip.txt" 2>&1 || { echo "pip failed"; cat "$OUT/pip.txt"; exit 1; }
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git log -1 --format=%H 2>/dev/null
  python3 -c "import torch, textual; print(torch.__version__, textual.__version__)"; nproc; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
timeout ${LIMIT:-550} python3 benchmarks/score_scenarios.py --only "$SCENARIOS" --modes "${MODES:-run,watch,attach}" \
  --seconds "${SECONDS_EACH:-6}" --parallel "${PARALLEL:-4}" --json "$OUT/score.json" --logs /tmp/score-logs \
  > "$OUT/score.txt" 2> "$OUT/progress.txt"
echo "rc=$?" >> "$OUT/score.txt"; tail -n 40 "$OUT/score.txt"; tail -n 3 "$OUT/progress.txt"
tar czf "$OUT/logs.tgz" -C /tmp score-logs 2>/dev/null
