#!/usr/bin/env bash
# Session 35's first GPU call, ordered by what matters most if the device's time runs out: session 34's
# mended CUDA parts test, the user job plain and under `xfertop run` at this tree (the state-flag setter of
# 5451ac1 runs inside training), trials j85 (does attach name the optimizer's step?) and j83 (whole-epochs
# window), then the view's CPU beside nvitop at 1 Hz and 4 Hz with the CUDA demo job. Logs in $OUT.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git log -1 --format=%H 2>/dev/null; } > "$OUT/machine.txt" 2>&1
XFERTOP_RESULTS_DIR="$OUT/gpu_results" timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider \
  tests/gpu/test_reporter_gpu.py -k "splits_a_cuda_step" > "$OUT/pytest_gpu.txt" 2>&1
echo "gpu test rc=$? at ${SECONDS}s"; tail -n 2 "$OUT/pytest_gpu.txt"
job=docs/measurements/h200-2026-12-02-s10/user_job.py
for mode in plain run; do
  export XFERTOP_DIR=/tmp/uj-rings-$mode
  if [ $mode = run ]; then timeout 120 python3 -m xfertop run -- python3 "$job" > "$OUT/user_job-$mode.txt" 2>&1
  else timeout 120 python3 "$job" > "$OUT/user_job-$mode.txt" 2>&1; fi
  echo "user_job $mode rc=$? at ${SECONDS}s $(grep -m1 '^result' "$OUT/user_job-$mode.txt")"
done
unset XFERTOP_DIR
SEC=12 TRIAL_LIBS=/tmp/site ATTACH_AT=0.7 timeout 200 python3 docs/measurements/cpu-2026-12-05-s31/trial.py \
  ../cpu-2026-12-05-s33/jobs/j85_cpu_offload_adam.py ../cpu-2026-12-05-s32/jobs/j83_clip_skip.py > "$OUT/trial.txt" 2>&1
echo "trial rc=$? at ${SECONDS}s"
timeout $((600 - SECONDS - 15)) python3 benchmarks/tui_cpu.py --seconds ${TUI_SEC:-20} --warmup 3 --out "$OUT/tui" \
  --load "python3 -m xfertop.launch.demo_job --phase-seconds 600 --device cuda" > "$OUT/tui_cpu.txt" 2>&1
echo "tui_cpu rc=$? at ${SECONDS}s"; tail -n 8 "$OUT/tui_cpu.txt"
