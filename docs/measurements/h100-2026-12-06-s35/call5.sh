#!/usr/bin/env bash
# Session 35's fifth GPU call, for the in-training code changed after call 1 (torch.autograd.grad wrapped,
# optimizer steps past a loader's end, the loader-off-thread flag's setter): the user job plain and under
# `xfertop run` (CUDA, 4 non-persistent workers, 3 epochs, validation, `break`, `sys.exit(3)`), then j89
# (itertools.cycle) under run if time is left. Logs in $OUT.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > "$OUT/machine.txt" 2>&1
job=docs/measurements/h200-2026-12-02-s10/user_job.py
for mode in plain run; do
  export XFERTOP_DIR=/tmp/uj-rings-$mode
  if [ $mode = run ]; then timeout 120 python3 -m xfertop run -- python3 "$job" > "$OUT/user_job-$mode.txt" 2>&1
  else timeout 120 python3 "$job" > "$OUT/user_job-$mode.txt" 2>&1; fi
  echo "user_job $mode rc=$? at ${SECONDS}s $(grep -m1 '^result' "$OUT/user_job-$mode.txt")"
done
export XFERTOP_DIR=/tmp/j89-rings PYTHONPATH=$PYTHONPATH:docs/measurements/cpu-2026-12-05-s31/jobs
timeout 60 python3 -m xfertop run -- python3 docs/measurements/cpu-2026-12-06-s35/jobs/j89_cycle_loader.py 10 \
  > "$OUT/j89-run.txt" 2>&1
echo "j89 run rc=$? at ${SECONDS}s"; grep -E "TRUTH|exited|last verdict" "$OUT/j89-run.txt" | cut -c1-200
