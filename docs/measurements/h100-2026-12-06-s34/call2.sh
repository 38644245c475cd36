#!/usr/bin/env bash
# Session 34's second GPU call: the CUDA parts test with its kernel time measured (it failed in call 1 on
# an H200: a sleep calibrated while the clock ramped ran ~4 ms, not 5), then j85 against its truth (attach
# names the optimizer's step since 1302776?); MORE=../cpu-2026-12-05-s32/jobs/j83_clip_skip.py adds j83
# (does the whole-epochs window of 54efd80 stop the summary's verdict flips?). Logs in $OUT.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/machine.txt" 2>&1
XFERTOP_RESULTS_DIR="$OUT/gpu_results" timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider \
  tests/gpu/test_reporter_gpu.py -k "splits_a_cuda_step" > "$OUT/pytest_gpu.txt" 2>&1
echo "gpu test rc=$? at ${SECONDS}s"; tail -n 2 "$OUT/pytest_gpu.txt"; cat "$OUT"/gpu_results/*.json 2>/dev/null | tr -d '\n '; echo
SEC=12 TRIAL_LIBS=/tmp/site ATTACH_AT=0.7 timeout 200 python3 docs/measurements/cpu-2026-12-05-s31/trial.py \
  ../cpu-2026-12-05-s33/jobs/j85_cpu_offload_adam.py ${MORE:-} > "$OUT/trial.txt" 2>&1
echo "trial rc=$? at ${SECONDS}s"
