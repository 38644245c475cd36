#!/usr/bin/env bash
# Session 40's third GPU call: the reporter's cost with its `xfertop run` rows (call 1's ran into its
# timeout before them), then the corpus's scenarios that session 39's reporter changes touch (a second
# loader's fetches joined by call site, a pass's wait from next()): l (Lightning, train + validation), p
# (a validation loader inside the epoch), m (HF Trainer), j (non-persistent workers over short epochs), in
# run, watch and attach, with their truth and plain runs (benchmarks/score_scenarios.py). Logs in $OUT.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 250 python3 benchmarks/reporter_overhead.py "$OUT/overhead" --run-rounds 3 > "$OUT/reporter_overhead.txt" 2>&1
echo "overhead rc=$? at ${SECONDS}s"; grep -E "as_run|xfertop_run|direct|no-copy|copy timing" "$OUT/reporter_overhead.txt" | tail -12
timeout $((570 - SECONDS)) python3 benchmarks/score_scenarios.py --only l,p,m,j --modes run,watch,attach \
  --seconds 6 --parallel 4 --json "$OUT/score.json" > "$OUT/score.txt" 2> "$OUT/progress.txt"
echo "score rc=$? at ${SECONDS}s"; tail -n 30 "$OUT/score.txt"; tail -n 3 "$OUT/progress.txt"
