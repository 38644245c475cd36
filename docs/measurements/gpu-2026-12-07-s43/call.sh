#!/usr/bin/env bash
# Session 43's device calls, from the repository root with .whl carried:
#   HOOKS=1 GPUTESTS=1 LIMIT=500 SCENARIOS=k,l,m,a,b,c,p,j bash docs/measurements/gpu-2026-12-07-s43/call.sh
# HOOKS=1 first weighs `xfertop run`'s hooks in one process (reporter_overhead.run_hooks_in_one_process:
# six on/off turns a round, 2,000 steps a pass, 3 rounds). Then session 42's corpus.sh (GPU tests when
# GPUTESTS=1, the scenarios in run, watch and attach). Everything it writes goes back as one call.tgz
# (the device returns at most 8 files); score.txt and gpu_tests.txt are copied beside it for a quick look.
set -u
O=$OUT
export OUT=/tmp/o
mkdir -p "$OUT"
if [ "${HOOKS:-0}" = 1 ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    > /dev/null 2>&1
  PYTHONPATH=/tmp/site:$PWD/src:$PWD/benchmarks timeout 90 python3 -c "
import json, reporter_overhead as r
print(json.dumps(r.run_hooks_in_one_process(2000, 3, 'cuda')))" > "$OUT/run_hooks.json" 2> "$OUT/run_hooks.err"
  echo "hooks rc=$? at ${SECONDS}s"; cat "$OUT/run_hooks.json"
fi
PARALLEL=${PARALLEL:-5} bash docs/measurements/cpu-2026-12-06-s42/corpus.sh
tar czf "$O/call.tgz" -C "$OUT" .
cp "$OUT/score.txt" "$OUT/gpu_tests.txt" "$O/" 2>/dev/null
ls -la "$O"
