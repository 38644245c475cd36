#!/usr/bin/env bash
# Session 15's GPU calls: the whole corpus in run, watch and attach at one commit (issue 20 item 8),
# split over calls that each fit the device tool's 600 s. Run from the repository root with .whl carried:
#   SCENARIOS=a,b,c PARALLEL=4 SECONDS_EACH=6 bash docs/measurements/h200-2026-12-03-s15/call.sh
# PARALLEL: host-bound scenarios at once (the scorer runs GPU-bound ones alone on one GPU).
# RDUMP=1 first dumps scenario r's plain job (py-spy, 3 dumps 1 s apart) to see where next() spends.
# USERJOB=1: session 10's user job (workers over epochs, validation, break, exit 3) plain, then with every
#   DataLoader under xfertop.watch() (the scorer's sitecustomize), then plain again: exit codes and result lines.
# SYNC60=1 last runs the sync-every-step scenario for 60 s plain, then under `xfertop run`.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > "$OUT/pip.txt" 2>&1 || { echo "pip failed"; cat "$OUT/pip.txt"; exit 1; }
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git log -1 --format=%H 2>/dev/null
  python3 -c "import torch, textual; print(torch.__version__, textual.__version__)"; nproc; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
if [ "${RDUMP:-0}" = 1 ]; then
  python3 benchmarks/scenarios/loop_augment.py --seconds 14 > "$OUT/r_plain.txt" 2>&1 &
  pid=$!; sleep 9
  for n in 1 2 3; do py-spy dump --pid "$pid" > "$OUT/r_dump$n.txt" 2>&1; sleep 1; done
  wait "$pid"; tail -n 2 "$OUT/r_plain.txt"; grep -h -m3 "next\|pin" "$OUT"/r_dump*.txt
fi
if [ "${USERJOB:-0}" = 1 ]; then
  site=/tmp/watch_site; mkdir -p "$site"
  python3 -c "import sys; sys.path.insert(0, 'benchmarks'); import score_scenarios as s; print(s._WATCH_SITE)" > "$site/sitecustomize.py"
  job=docs/measurements/h200-2026-12-02-s10/user_job.py
  for mode in plain watch plain2; do
    began=$(date +%s.%N)
    if [ "$mode" = watch ]; then
      XFERTOP_DIR=/tmp/uj-rings SCENARIO_WATCH=1 PYTHONPATH="$site:$PYTHONPATH" python3 "$job" > "$OUT/user_job-$mode.txt" 2>&1 &
      pid=$!; sleep 12; XFERTOP_DIR=/tmp/uj-rings python3 -m xfertop --once > "$OUT/user_job-watch-poll.txt" 2>&1; wait "$pid"
    else python3 "$job" > "$OUT/user_job-$mode.txt" 2>&1; fi
    rc=$?; echo "user_job $mode rc=$rc wall=$(python3 -c "print(round($(date +%s.%N)-$began,1))") $(grep -m1 '^result' "$OUT/user_job-$mode.txt")"
  done
  grep -i -m4 "bound\|healthy\|warming" "$OUT/user_job-watch-poll.txt"
fi
if [ -n "${SCENARIOS:-}" ]; then
  timeout ${LIMIT:-550} python3 benchmarks/score_scenarios.py --only "$SCENARIOS" --modes "${MODES:-run,watch,attach}" \
    --seconds "${SECONDS_EACH:-6}" --parallel "${PARALLEL:-4}" --json "$OUT/score.json" --logs /tmp/score-logs \
    > "$OUT/score.txt" 2> "$OUT/progress.txt"
  echo "rc=$?" >> "$OUT/score.txt"; tail -n 40 "$OUT/score.txt"; tail -n 3 "$OUT/progress.txt"
  tar czf "$OUT/logs.tgz" -C /tmp score-logs 2>/dev/null
fi
if [ "${SYNC60:-0}" = 1 ]; then
  for mode in plain run; do
    pre=(); [ "$mode" = run ] && pre=(python3 -m xfertop run --)
    "${pre[@]}" python3 benchmarks/scenarios/sync_every_step.py --seconds 60 > "$OUT/sync60-$mode.txt" 2>&1
    echo "$mode rc=$? $(grep -m1 '^result' "$OUT/sync60-$mode.txt")"
  done
fi
