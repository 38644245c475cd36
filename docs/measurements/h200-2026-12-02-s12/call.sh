#!/usr/bin/env bash
# One GPU call of session 12, by PART (each fits one 600 s call):
#   PART=a  a user's CUDA job (../h200-2026-12-02-s10/user_job.py: JPEG, 4 non-persistent workers,
#           validation loader, break, exit 3) plain, under `xfertop run`, plain again; the GPU tests of
#           the reporter, the probe and fork safety; where copy timing's host time goes (copy_cost.py:
#           primitives, in-process side by side, py-spy profiles of each variant)
#   PART=b  the live view beside nvitop; where copy timing's host time goes (as in a)
#   PART=r  the reporter's per-step cost (reporter_overhead.py, 3 rounds of `xfertop run`), copy_cost.py
#   PART=c  the corpus in MODES (default run,watch,attach) for SCENARIOS
# Run from the repository root with the wheels of .whl carried (textual, py-spy, nvitop):
#   PART=a bash docs/measurements/h200-2026-12-02-s12/call.sh
set -u
HERE=docs/measurements/h200-2026-12-02-s12
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > "$OUT/pip.txt" 2>&1 || { echo "pip failed"; cat "$OUT/pip.txt"; exit 1; }
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/machine.txt" 2>&1
python3 -c "import torch, textual; print(torch.__version__, textual.__version__)" >> "$OUT/machine.txt" 2>&1
nproc >> "$OUT/machine.txt"; cat "$OUT/machine.txt"
# Where copy timing's host time goes: copy_cost.py side by side, then py-spy on each variant's loop.
profile() {
  XFERTOP_DIR=/tmp/rings-cost timeout 120 python3 $HERE/copy_cost.py > "$OUT/copy_cost.txt" 2>&1
  echo "rc=$?" >> "$OUT/copy_cost.txt"; grep -v -i warn "$OUT/copy_cost.txt"
  mkdir -p /tmp/prof
  for variant in ${VARIANTS:-direct watched watched-nogpu copy}; do
    XFERTOP_DIR=/tmp/rings-cost timeout 40 py-spy record -r 250 -f raw -o /tmp/prof/$variant.txt -- \
      python3 $HERE/copy_cost.py --spin $variant --seconds 8 > /tmp/prof/$variant.log 2>&1
    grep -E "spin|Samples" /tmp/prof/$variant.log
    python3 $HERE/fold.py /tmp/prof/$variant.txt 30 > /tmp/prof/fold-$variant.txt 2>&1
  done
  cat /tmp/prof/fold-*.txt > "$OUT/profiles.txt"
  grep -A32 -- "-- self" /tmp/prof/fold-copy.txt | head -40
}
USER_JOB=docs/measurements/h200-2026-12-02-s10/user_job.py
case "${PART:-a}" in
a)
  {
    for how in plain run plain2; do
      start=$(date +%s.%N)
      if [ "$how" = run ]; then
        XFERTOP_DIR=/tmp/rings-user timeout 120 python3 -m xfertop run -- python3 $USER_JOB \
          > /tmp/user-$how.out 2> /tmp/user-$how.err &
        job=$!
        for i in 1 2 3 4; do sleep 4; XFERTOP_DIR=/tmp/rings-user python3 -m xfertop --once --json \
          > /tmp/poll$i.json 2>&1; python3 -c "import json,sys; d=json.load(open('/tmp/poll$i.json'))
jobs = d.get('jobs', {}); jobs = jobs.get('items', []) if isinstance(jobs, dict) else jobs
[print('poll $i', (j.get('verdict') or {}).get('kind'), '|', (j.get('verdict') or {}).get('headline')) for j in jobs]" 2>&1 | head -3; done
        wait $job; rc=$?
      else
        timeout 120 python3 $USER_JOB > /tmp/user-$how.out 2> /tmp/user-$how.err; rc=$?
      fi
      echo "== $how: exit $rc, $(python3 -c "import time; print(round(time.time()-$start,1))") s"
      cat /tmp/user-$how.out
      tail -n 25 /tmp/user-$how.err
    done
  } > "$OUT/user_job.txt" 2>&1
  grep -E "^==|result|poll|bound|healthy|steps=" "$OUT/user_job.txt" | cut -c1-250 | head -30
  timeout 150 python3 -m pytest -q -m gpu --timeout 60 -p no:cacheprovider tests/gpu/test_probe_gpu.py \
    tests/gpu/test_reporter_gpu.py tests/gpu/test_fork_safety_gpu.py > "$OUT/pytest_gpu.txt" 2>&1
  echo "rc=$?" >> "$OUT/pytest_gpu.txt"; tail -n 3 "$OUT/pytest_gpu.txt"
  profile
  ;;
b)
  timeout 140 python3 benchmarks/tui_cpu.py --seconds 25 --warmup 3 --rates-hz 1,4 --out /tmp/tui \
    --load "python3 -m xfertop.launch.demo_job --phase-seconds 600 --device cuda" > "$OUT/tui_cpu.txt" 2>&1
  echo "rc=$?" >> "$OUT/tui_cpu.txt"; grep -E "Hz|rc=|x " "$OUT/tui_cpu.txt"
  profile
  ;;
r)
  timeout 170 python3 benchmarks/reporter_overhead.py /tmp/ro --run-rounds 3 > "$OUT/reporter_overhead.txt" 2>&1
  echo "rc=$?" >> "$OUT/reporter_overhead.txt"; grep -v "^ *$" "$OUT/reporter_overhead.txt" | tail -n 20
  VARIANTS=copy profile
  ;;
c)
  timeout ${LIMIT:-540} python3 benchmarks/score_scenarios.py --only "$SCENARIOS" --modes "${MODES:-run,watch,attach}" \
    --seconds "${SECONDS_EACH:-5}" --parallel 3 --json "$OUT/score.json" --logs /tmp/score-logs \
    > "$OUT/score.txt" 2>&1
  echo "rc=$?" >> "$OUT/score.txt"; tail -n 45 "$OUT/score.txt"
  ;;
esac
tar czf "$OUT/logs.tgz" -C /tmp $(cd /tmp && ls -d score-logs user-*.out user-*.err poll*.json ro prof tui 2>/dev/null) 2>/dev/null
