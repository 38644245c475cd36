#!/usr/bin/env bash
# Session 42's GPU calls: the whole corpus (benchmarks/scenarios/, 23 scenarios) in run, watch and attach,
# with each scenario's plain and synchronised truth runs, at one tree, split over three calls that each fit
# the device tool's 600 s (issue 20 item 8). Run from the repository root, .whl carried (the calls made are
# in this folder's README). GPUTESTS=1 first runs the reporter's gpu-marked tests (tests/gpu/test_reporter_gpu.py).
# Host-bound scenarios share the GPU PARALLEL (default 4) at a time; the others run alone, one after the
# other (score_scenarios.py). Every job's stdout/stderr comes back in logs.tgz. MEASURE=1 first runs
# measure.sh's reporter-cost and terminal-bytes parts (lighter), LIMIT (default 575) ends the call.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > "$OUT/pip.txt" 2>&1 || { echo "pip failed"; cat "$OUT/pip.txt"; exit 1; }
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, textual; print(torch.__version__, textual.__version__)"; nproc; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
if [ "${GPUTESTS:-0}" = 1 ]; then  # the GPU clock's stories on the real thing, results as JSON in $OUT
  XFERTOP_RESULTS_DIR="$OUT" timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_reporter_gpu.py \
    > "$OUT/gpu_tests.txt" 2>&1
  echo "gpu tests rc=$? at ${SECONDS}s"; tail -n 15 "$OUT/gpu_tests.txt"
fi
if [ "${MEASURE:-0}" = 1 ]; then  # measure.sh's first two parts, lighter: the reporter's cost, the view's bytes
  timeout 150 python3 benchmarks/reporter_overhead.py "$OUT/overhead" --quick --run-rounds 3 > "$OUT/reporter_overhead.txt" 2>&1
  echo "overhead rc=$? at ${SECONDS}s"; grep -E "as_run|run_hooks|xfertop_run" "$OUT/reporter_overhead.txt" | tail -8
  timeout 55 python3 docs/measurements/cpu-2026-12-06-s40/bytes_by_row.py 30 15 --real --cuda > "$OUT/bytes_by_row.txt" 2>&1
  echo "bytes rc=$? at ${SECONDS}s"; head -3 "$OUT/bytes_by_row.txt"
fi
timeout $((${LIMIT:-575} - SECONDS)) python3 benchmarks/score_scenarios.py --only "$SCENARIOS" \
  --modes run,watch,attach --seconds 6 --parallel "${PARALLEL:-4}" --json "$OUT/score.json" --logs /tmp/score-logs \
  > "$OUT/score.txt" 2> "$OUT/progress.txt"
echo "score rc=$? at ${SECONDS}s"; tail -n 45 "$OUT/score.txt"; tail -n 3 "$OUT/progress.txt"
tar czf "$OUT/logs.tgz" -C /tmp score-logs 2>/dev/null
