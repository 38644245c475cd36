#!/usr/bin/env bash
# Session 33's third GPU call, ordered by what matters most if the device's time runs out: the CUDA tests
# of this session's in-training code (the optimizer-device check, the empty_cache wrapper), the user job
# plain and under `xfertop run` (same exit code, same result line), then the new trial jobs against their
# synchronised truth (j85 CPU-offloaded AdamW, j84 empty_cache every step, j86 a dataset resident on the
# GPU). Run from the repository root with .whl carried; every log lands in $OUT as it is written.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git log -1 --format=%H 2>/dev/null; } > "$OUT/machine.txt" 2>&1
XFERTOP_RESULTS_DIR="$OUT/gpu_results" timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider \
  tests/gpu/test_reporter_gpu.py -k "empty_cache or switches or xfertop_run" > "$OUT/pytest_gpu.txt" 2>&1
echo "gpu tests rc=$? at ${SECONDS}s"; tail -n 3 "$OUT/pytest_gpu.txt"
job=docs/measurements/h200-2026-12-02-s10/user_job.py
for mode in plain run; do
  export XFERTOP_DIR=/tmp/uj-rings-$mode
  if [ $mode = run ]; then timeout 120 python3 -m xfertop run -- python3 "$job" > "$OUT/user_job-$mode.txt" 2>&1
  else timeout 120 python3 "$job" > "$OUT/user_job-$mode.txt" 2>&1; fi
  echo "user_job $mode rc=$? at ${SECONDS}s $(grep -m1 '^result' "$OUT/user_job-$mode.txt")"
done
unset XFERTOP_DIR
S=../cpu-2026-12-05-s33/jobs
SEC=${SEC:-14} TRIAL_LIBS=/tmp/site ATTACH_AT=0.7 timeout ${LIMIT:-400} python3 docs/measurements/cpu-2026-12-05-s31/trial.py \
  ${JOBS:-$S/j85_cpu_offload_adam.py $S/j84_empty_cache.py $S/j86_gpu_resident.py} > "$OUT/trial.txt" 2>&1
echo "trial rc=$? at ${SECONDS}s"
