#!/usr/bin/env bash
# Session 29's GPU calls: the in-training commits of sessions 27-28 on CUDA (2f38a65, 36f6fd9, 90b8872,
# b137833, e65b25e, 3128973: written without a device). Run from the repository root with .whl carried;
# files land in $OUT directly (a call cut by the device's limit still returns what it wrote).
#   GPUTEST=1   tests/gpu/test_reporter_gpu.py (session 28's switches and busy thread on CUDA too) and
#               test_fork_safety_gpu.py; each test's figures under $OUT/gpu_results
#   USERJOB=1   session 10's user job (JPEG decode + torchvision augmentation in 4 non-persistent workers,
#               3 epochs with a validation loader, a break, exit 3) plain, under `xfertop run` (a live poll
#               12 s in), under watch() (the scorer's sitecustomize), plain again: exit codes, result lines
#   OVERHEAD=1  benchmarks/reporter_overhead.py --quick
#   TUI=S       benchmarks/tui_cpu.py beside nvitop at 1 Hz and 4 Hz, S s each, the CUDA demo job as load
#   TUISPY=S    tui_threads.py (beside this file): the view's CPU by thread at 1 and 4 Hz, S s each, then
#               a py-spy record of it (--threads), the CUDA demo job as load
#   PAIRS=N     benchmarks/plain_vs_run.py --pairs N on scenario h for 60 s a run (issue 20's >= 0.98)
#   SCENARIOS=  the corpus through session 15's call.sh (MODES, PARALLEL, SECONDS_EACH) within DEADLINE
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > "$OUT/pip0.txt" 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git log -1 --format=%H 2>/dev/null
  python3 -c "import sys, torch, textual; print(sys.version.split()[0], torch.__version__, textual.__version__)"
  nproc; } > "$OUT/machine.txt" 2>&1
if [ "${GPUTEST:-0}" = 1 ]; then
  XFERTOP_RESULTS_DIR="$OUT/gpu_results" timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_reporter_gpu.py \
    tests/gpu/test_fork_safety_gpu.py > "$OUT/pytest_gpu.txt" 2>&1
  echo "gpu tests rc=$? at ${SECONDS}s"; tail -n 4 "$OUT/pytest_gpu.txt"
fi
if [ "${USERJOB:-0}" = 1 ]; then
  site=/tmp/watch_site; mkdir -p "$site"
  python3 -c "import sys; sys.path.insert(0, 'benchmarks'); import score_scenarios as s; print(s._WATCH_SITE)" > "$site/sitecustomize.py"
  job=docs/measurements/h200-2026-12-02-s10/user_job.py
  for mode in ${USERJOB_MODES:-plain run watch plain2}; do
    began=$(date +%s.%N); export XFERTOP_DIR=/tmp/uj-rings-$mode
    case $mode in
      run) timeout 120 python3 -m xfertop run -- python3 "$job" > "$OUT/user_job-$mode.txt" 2>&1 & ;;
      watch) SCENARIO_WATCH=1 PYTHONPATH="$site:$PYTHONPATH" timeout 120 python3 "$job" > "$OUT/user_job-$mode.txt" 2>&1 & ;;
      *) timeout 120 python3 "$job" > "$OUT/user_job-$mode.txt" 2>&1 & ;;
    esac
    pid=$!
    if [ "$mode" = run ] || [ "$mode" = watch ]; then
      sleep 12; python3 -m xfertop --once > "$OUT/user_job-$mode-poll.txt" 2>&1
    fi
    wait "$pid"; rc=$?
    echo "user_job $mode rc=$rc wall=$(python3 -c "print(round($(date +%s.%N)-$began,1))") $(grep -m1 '^result' "$OUT/user_job-$mode.txt")"
    [ -f "$OUT/user_job-$mode-poll.txt" ] && grep -i -m2 "bound\|healthy\|warming\|not in" "$OUT/user_job-$mode-poll.txt"
  done
  unset XFERTOP_DIR
  grep -i -A3 "bound\|healthy" "$OUT/user_job-run.txt" | head -n 8
  # The summary's JSON and the logs in one file: the device returns a few files only.
  cp /tmp/uj-rings-run/summaries/*.json "$OUT/" 2>/dev/null
  tar czf "$OUT/user_job.tgz" -C "$OUT" $(cd "$OUT" && ls user_job-* *.json 2>/dev/null) && \
    (cd "$OUT" && rm -f user_job-* ./*.json)
fi
if [ "${OVERHEAD:-0}" = 1 ]; then
  timeout 200 python3 benchmarks/reporter_overhead.py --quick "$OUT/overhead" > "$OUT/overhead.txt" 2>&1
  echo "overhead rc=$? at ${SECONDS}s"; grep -E "in_process_cuda|xfertop_run" "$OUT/overhead.txt"
fi
if [ "${TUI:-0}" != 0 ]; then
  timeout 300 python3 benchmarks/tui_cpu.py --seconds "$TUI" --warmup 3 --rates-hz 1,4 --out "$OUT/tui" \
    --load "python3 -m xfertop.launch.demo_job --phase-seconds 600 --device cuda" > "$OUT/tui_cpu.txt" 2>&1
  echo "tui rc=$? at ${SECONDS}s"; tail -n 8 "$OUT/tui_cpu.txt"
fi
if [ "${TUISPY:-0}" != 0 ]; then
  timeout 300 python3 docs/measurements/h100-2026-12-05-s29/tui_threads.py "$OUT/tui_threads" --seconds "$TUISPY" \
    --load "python3 -m xfertop.launch.demo_job --phase-seconds 600 --device cuda" > "$OUT/tui_threads.txt" 2>&1
  echo "tui threads rc=$? at ${SECONDS}s"; cat "$OUT/tui_threads.txt"
fi
if [ "${PAIRS:-0}" != 0 ]; then
  timeout 590 python3 benchmarks/plain_vs_run.py --pairs "$PAIRS" --json "$OUT/h_pairs.json" \
    -- python3 benchmarks/scenarios/sync_every_step.py --seconds 60 > "$OUT/h_pairs.txt" 2>&1
  echo "pairs rc=$? at ${SECONDS}s"; tail -n 12 "$OUT/h_pairs.txt"
fi
if [ -n "${SCENARIOS:-}" ]; then
  LIMIT=$(( ${DEADLINE:-560} - SECONDS )) SYNC60=0 bash docs/measurements/h200-2026-12-03-s15/call.sh
fi
exit 0
