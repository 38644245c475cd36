#!/usr/bin/env bash
# Session 44's device call, from the repository root with .whl carried:
#   JOB=1 HOOKS=1 GPUTESTS=1 TOTAL=570 SCENARIOS=k,l,m bash docs/measurements/gpu-2026-12-07-s44/call.sh
# JOB=1 first runs a real CUDA job plain and under `xfertop run` (benchmarks/epochs_job.py, 2 epochs, exit
# code 3; one pair of benchmarks/plain_vs_run.py): same exit code, same printed lines, samples/s. HOOKS=1
# weighs `xfertop run`'s hooks in one process (reporter_overhead.run_hooks_in_one_process: six on/off
# turns a round). Then session 42's corpus.sh: GPUTESTS=1 runs the reporter's gpu tests, SCENARIOS are
# scored in run, watch and attach with their truth, until TOTAL seconds from this script's start.
# Everything comes back as call.tgz (the device returns at most 8 files), with a few texts beside it.
set -u
O=$OUT
export OUT=/tmp/o
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1
if [ "${JOB:-0}" = 1 ]; then
  PYTHONPATH=/tmp/site:$PWD/src timeout "${JOB_S:-200}" python3 benchmarks/plain_vs_run.py --pairs 1 \
    --json "$OUT/plain_vs_run.json" -- python3 benchmarks/epochs_job.py --epochs 2 --exit-code 3 \
    > "$OUT/plain_vs_run.txt" 2>&1
  echo "job rc=$? at ${SECONDS}s"; tail -n 12 "$OUT/plain_vs_run.txt"
fi
if [ "${HOOKS:-0}" = 1 ]; then
  PYTHONPATH=/tmp/site:$PWD/src:$PWD/benchmarks timeout 90 python3 -c "
import json, reporter_overhead as r
print(json.dumps(r.run_hooks_in_one_process(2000, 3, 'cuda')))" > "$OUT/run_hooks.json" 2> "$OUT/run_hooks.err"
  echo "hooks rc=$? at ${SECONDS}s"; cat "$OUT/run_hooks.json"
fi
LIMIT=$((${TOTAL:-570} - SECONDS)) PARALLEL=${PARALLEL:-5} bash docs/measurements/cpu-2026-12-06-s42/corpus.sh
tar czf "$O/call.tgz" -C "$OUT" .
cp "$OUT/score.txt" "$OUT/gpu_tests.txt" "$OUT/plain_vs_run.txt" "$OUT/run_hooks.json" "$O/" 2>/dev/null
ls -la "$O"
