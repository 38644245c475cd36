#!/usr/bin/env bash
# One H200 call of session 11, by PART (each fits one 600 s call):
#   PART=a  a user's CUDA job (../h200-2026-12-02-s10/user_job.py: JPEG, 4 non-persistent workers,
#           validation loader, break, exit 3) plain, under `xfertop run`, plain again; the GPU tests of the
#           reporter, the probe and fork safety; the sync-every-step job for 60 s plain and under
#           `xfertop run` (issue 20: >= 0.98); the reporter's per-step cost in what is left
#   PART=b  the probe's accuracy on pageable jobs (plain and with compute several times the pinned copy);
#           the live view beside nvitop; the reporter's per-step cost (3 rounds of `xfertop run`)
#   PART=c  the corpus in run, watch and attach for SCENARIOS (host-bound ones 3 at a time)
#   PART=d  the live view beside nvitop and the reporter's per-step cost (after their changes), then the
#           corpus in MODES (default watch,attach) for SCENARIOS in what is left of the call
# Run from the repository root with the wheels of .whl carried (textual, py-spy, nvitop):
#   PART=a bash docs/measurements/h200-2026-12-02-s11/call.sh
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > "$OUT/pip.txt" 2>&1 || { echo "pip failed"; cat "$OUT/pip.txt"; exit 1; }
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/machine.txt" 2>&1
python3 -c "import torch, textual; print(torch.__version__, textual.__version__)" >> "$OUT/machine.txt" 2>&1
nproc >> "$OUT/machine.txt"
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
          > /tmp/poll$i.json 2>&1; python3 -c "import json,sys; d=json.load(open('/tmp/poll$i.json'));
[print('poll $i', j.get('verdict',{}).get('kind'), '|', j.get('verdict',{}).get('headline')) for j in d.get('jobs',[])]" 2>&1 | head -3; done
        wait $job; rc=$?
      else
        timeout 120 python3 $USER_JOB > /tmp/user-$how.out 2> /tmp/user-$how.err; rc=$?
      fi
      echo "== $how: exit $rc, $(python3 -c "import time; print(round(time.time()-$start,1))") s"
      cat /tmp/user-$how.out
      tail -n 25 /tmp/user-$how.err
    done
  } > "$OUT/user_job.txt" 2>&1
  grep -E "^==|result|poll|bound|healthy|steps=" "$OUT/user_job.txt" | head -30
  timeout 150 python3 -m pytest -q -m gpu --timeout 60 -p no:cacheprovider tests/gpu/test_probe_gpu.py \
    tests/gpu/test_reporter_gpu.py tests/gpu/test_fork_safety_gpu.py > "$OUT/pytest_gpu.txt" 2>&1
  echo "rc=$?" >> "$OUT/pytest_gpu.txt"; tail -n 3 "$OUT/pytest_gpu.txt"
  # The sync-every-step job, 60 s plain then under `xfertop run` (its summary says what it read).
  {
    timeout 90 python3 benchmarks/scenarios/sync_every_step.py --seconds 60; echo "plain exit $?"
    XFERTOP_DIR=/tmp/rings-sync timeout 90 python3 -m xfertop run -- \
      python3 benchmarks/scenarios/sync_every_step.py --seconds 60; echo "run exit $?"
  } > "$OUT/sync60.txt" 2>&1
  grep -E "samples_per_s|exit|bound|healthy" "$OUT/sync60.txt" | cut -c1-300
  timeout 150 python3 benchmarks/reporter_overhead.py /tmp/ro > "$OUT/reporter_overhead.txt" 2>&1
  echo "rc=$?" >> "$OUT/reporter_overhead.txt"; tail -n 25 "$OUT/reporter_overhead.txt"
  ;;
b)
  timeout 200 python3 benchmarks/probe_accuracy_gpu.py /tmp/pag --cases pageable,pageable-compute \
    > "$OUT/probe_gpu.txt" 2>&1
  echo "rc=$?" >> "$OUT/probe_gpu.txt"; cp /tmp/pag/*.json "$OUT/" 2>/dev/null; cat "$OUT/probe_gpu.txt"
  timeout 140 python3 benchmarks/tui_cpu.py --seconds 25 --warmup 3 --rates-hz 1,4 --out /tmp/tui \
    --load "python3 -m xfertop.launch.demo_job --phase-seconds 600 --device cuda" > "$OUT/tui_cpu.txt" 2>&1
  echo "rc=$?" >> "$OUT/tui_cpu.txt"; cat "$OUT/tui_cpu.txt"; cp /tmp/tui/*.json "$OUT/" 2>/dev/null
  timeout 200 python3 benchmarks/reporter_overhead.py /tmp/ro --run-rounds 3 > "$OUT/reporter_overhead.txt" 2>&1
  echo "rc=$?" >> "$OUT/reporter_overhead.txt"; grep -v "^ *$" "$OUT/reporter_overhead.txt" | tail -n 20
  cp /tmp/ro/*.json "$OUT/" 2>/dev/null
  ;;
c)
    timeout ${LIMIT:-540} python3 benchmarks/score_scenarios.py --only "$SCENARIOS" --modes "${MODES:-run,watch,attach}" \
      --seconds "${SECONDS_EACH:-5}" --parallel 3 --json "$OUT/score.json" --logs /tmp/score-logs \
      > "$OUT/score.txt" 2>&1
    echo "rc=$?" >> "$OUT/score.txt"; tail -n 45 "$OUT/score.txt"
  ;;
d)
  timeout 140 python3 benchmarks/tui_cpu.py --seconds 25 --warmup 3 --rates-hz 1,4 --out /tmp/tui \
    --load "python3 -m xfertop.launch.demo_job --phase-seconds 600 --device cuda" > "$OUT/tui_cpu.txt" 2>&1
  echo "rc=$?" >> "$OUT/tui_cpu.txt"; grep -E "Hz|rc=" "$OUT/tui_cpu.txt"; cp /tmp/tui/*.json "$OUT/" 2>/dev/null
  timeout 170 python3 benchmarks/reporter_overhead.py /tmp/ro --run-rounds 3 > "$OUT/reporter_overhead.txt" 2>&1
  echo "rc=$?" >> "$OUT/reporter_overhead.txt"; grep -v "^ *$" "$OUT/reporter_overhead.txt" | tail -n 20
  cp /tmp/ro/*.json "$OUT/" 2>/dev/null
  # What copy timing's Tensor.is_pinned() costs per host-to-device copy on a CUDA build.
  python3 -c "
import time, torch
torch.ones(1, device='cuda')
for name, t in (('pageable', torch.ones(8, 64)), ('pinned', torch.ones(8, 64).pin_memory())):
    t.is_pinned(); began = time.perf_counter_ns()
    for _ in range(20000): t.is_pinned()
    print(name, 'is_pinned', round((time.perf_counter_ns() - began) / 20000), 'ns/call')
" > "$OUT/is_pinned.txt" 2>&1; cat "$OUT/is_pinned.txt"
  timeout ${LIMIT:-220} python3 benchmarks/score_scenarios.py --only "$SCENARIOS" --modes "${MODES:-watch,attach}" \
    --seconds "${SECONDS_EACH:-6}" --parallel 3 --json "$OUT/score.json" --logs /tmp/score-logs \
    > "$OUT/score.txt" 2>&1
  echo "rc=$?" >> "$OUT/score.txt"; tail -n 30 "$OUT/score.txt"
  ;;
esac
tar czf "$OUT/logs.tgz" -C /tmp $(cd /tmp && ls -d score-logs user-*.out user-*.err poll*.json ro rings-sync 2>/dev/null) 2>/dev/null
