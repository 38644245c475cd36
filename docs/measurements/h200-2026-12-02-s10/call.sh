#!/usr/bin/env bash
# One H200 call of session 10, by PART (each fits one 600 s call):
#   PART=a  a user's CUDA job (user_job.py) plain, under `xfertop run`, plain again; the reporter's GPU
#           tests; the reporter's per-step cost; the probe's accuracy on GPU jobs and on CPU jobs
#   PART=d  the probe's accuracy again (pinned phase, ResNet-50 pipeline), the probe on Lightning and the
#           Hugging Face Trainer, the GPU tests of the reporter and the probe
#   PART=e  the probe's accuracy again (phases timed between synchronisations, ResNet-152), then the
#           corpus in run, watch and attach for SCENARIOS in what is left of the call
#   PART=b  the corpus in run, watch and attach for SCENARIOS (serial: each alone on the GPU)
#   PART=c  the same for SCENARIOS with host-bound ones 3 at a time, then the live view beside nvitop
# Run from the repository root with the wheels of .whl carried (textual, py-spy, nvitop):
#   PART=a bash docs/measurements/h200-2026-12-02-s10/call.sh
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > "$OUT/pip.txt" 2>&1 || { echo "pip failed"; cat "$OUT/pip.txt"; exit 1; }
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
git log -1 --format=%h > "$OUT/machine.txt" 2>/dev/null || true
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$OUT/machine.txt" 2>&1
python3 -c "import torch, textual; print(torch.__version__, textual.__version__)" >> "$OUT/machine.txt" 2>&1
nproc >> "$OUT/machine.txt"
HERE=docs/measurements/h200-2026-12-02-s10
case "${PART:-a}" in
a)
  {
    for how in plain run plain2; do
      start=$(date +%s.%N)
      if [ "$how" = run ]; then
        XFERTOP_DIR=/tmp/rings-user timeout 120 python3 -m xfertop run -- python3 $HERE/user_job.py \
          > /tmp/user-$how.out 2> /tmp/user-$how.err &
        job=$!
        for i in 1 2 3 4; do sleep 4; XFERTOP_DIR=/tmp/rings-user python3 -m xfertop --once --json \
          > /tmp/poll$i.json 2>&1; python3 -c "import json,sys; d=json.load(open('/tmp/poll$i.json'));
[print('poll $i', j.get('verdict',{}).get('kind'), '|', j.get('verdict',{}).get('headline')) for j in d.get('jobs',[])]" 2>&1 | head -3; done
        wait $job; rc=$?
      else
        timeout 120 python3 $HERE/user_job.py > /tmp/user-$how.out 2> /tmp/user-$how.err; rc=$?
      fi
      echo "== $how: exit $rc, $(python3 -c "import time; print(round(time.time()-$start,1))") s"
      cat /tmp/user-$how.out
      tail -n 25 /tmp/user-$how.err
    done
  } > "$OUT/user_job.txt" 2>&1
  cat "$OUT/user_job.txt" | grep -E "^==|result|poll|bound|healthy" | head -30
  timeout 110 python3 -m pytest -q -m gpu tests/gpu/test_reporter_gpu.py tests/gpu/test_fork_safety_gpu.py \
    -p no:cacheprovider > "$OUT/pytest_gpu.txt" 2>&1; echo "rc=$?" >> "$OUT/pytest_gpu.txt"
  tail -n 3 "$OUT/pytest_gpu.txt"
  timeout 100 python3 benchmarks/reporter_overhead.py /tmp/ro > "$OUT/reporter_overhead.txt" 2>&1
  echo "rc=$?" >> "$OUT/reporter_overhead.txt"; tail -n 25 "$OUT/reporter_overhead.txt"
  timeout 200 python3 benchmarks/probe_accuracy_gpu.py /tmp/pag > "$OUT/probe_gpu.txt" 2>&1
  echo "rc=$?" >> "$OUT/probe_gpu.txt"; cp /tmp/pag/*.json "$OUT/" 2>/dev/null; cat "$OUT/probe_gpu.txt"
  timeout 90 python3 benchmarks/probe_accuracy.py /tmp/pac --rounds 3 > "$OUT/probe_cpu.txt" 2>&1
  echo "rc=$?" >> "$OUT/probe_cpu.txt"; cat "$OUT/probe_cpu.txt"
  ;;
d)
  timeout 230 python3 benchmarks/probe_accuracy_gpu.py /tmp/pag > "$OUT/probe_gpu.txt" 2>&1
  echo "rc=$?" >> "$OUT/probe_gpu.txt"; cp /tmp/pag/*.json "$OUT/" 2>/dev/null; cat "$OUT/probe_gpu.txt"
  for job in lightning_job hf_trainer_job; do
    XFERTOP_DIR=/tmp/rings-$job timeout 110 python3 -m xfertop probe --steps 20 --warmup 10 --grace 15 -- \
      python3 benchmarks/scenarios/$job.py --seconds 600 > /tmp/probe-$job.out 2> /tmp/probe-$job.err
    echo "== $job: exit $?"; grep -v "^\s*$" /tmp/probe-$job.out | tail -n 14; tail -n 3 /tmp/probe-$job.err
  done > "$OUT/probe_frameworks.txt" 2>&1
  cat "$OUT/probe_frameworks.txt"
  timeout 170 python3 -m pytest -q -m gpu --timeout 60 --durations 6 -p no:cacheprovider \
    tests/gpu/test_probe_gpu.py tests/gpu/test_reporter_gpu.py tests/gpu/test_fork_safety_gpu.py \
    > "$OUT/pytest_gpu.txt" 2>&1; echo "rc=$?" >> "$OUT/pytest_gpu.txt"; tail -n 25 "$OUT/pytest_gpu.txt"
  ;;
e)
  timeout 240 python3 benchmarks/probe_accuracy_gpu.py /tmp/pag > "$OUT/probe_gpu.txt" 2>&1
  echo "rc=$?" >> "$OUT/probe_gpu.txt"; cp /tmp/pag/*.json "$OUT/" 2>/dev/null; cat "$OUT/probe_gpu.txt"
  timeout ${LIMIT:-280} python3 benchmarks/score_scenarios.py --only "$SCENARIOS" --modes run,watch,attach \
    --seconds "${SECONDS_EACH:-5}" --json "$OUT/score.json" --logs /tmp/score-logs > "$OUT/score.txt" 2>&1
  echo "rc=$?" >> "$OUT/score.txt"; tail -n 30 "$OUT/score.txt"
  ;;
b|c)
  LIMIT=${LIMIT:-540}
  if [ "$PART" = c ] && [ -n "${TUI:-}" ]; then LIMIT=$((LIMIT - 150)); fi
  timeout $LIMIT python3 benchmarks/score_scenarios.py --only "$SCENARIOS" --modes run,watch,attach \
    --seconds "${SECONDS_EACH:-5}" --parallel 3 --json "$OUT/score.json" --logs /tmp/score-logs \
    > "$OUT/score.txt" 2>&1
  echo "rc=$?" >> "$OUT/score.txt"; tail -n 45 "$OUT/score.txt"
  if [ "$PART" = c ] && [ -n "${TUI:-}" ]; then
    timeout 140 python3 benchmarks/tui_cpu.py --seconds 25 --warmup 3 --rates-hz 1,4 --out /tmp/tui \
      --load "python3 -m xfertop.launch.demo_job --phase-seconds 600 --device cuda" > "$OUT/tui_cpu.txt" 2>&1
    echo "rc=$?" >> "$OUT/tui_cpu.txt"; cat "$OUT/tui_cpu.txt"; cp /tmp/tui/*.json "$OUT/" 2>/dev/null
  fi
  ;;
esac
tar czf "$OUT/logs.tgz" -C /tmp $(cd /tmp && ls -d score-logs probe-*.out probe-*.err user-*.out user-*.err poll*.json ro 2>/dev/null) 2>/dev/null
