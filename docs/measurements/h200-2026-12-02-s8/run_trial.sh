#!/usr/bin/env bash
# The H200 trial of the GPU clock: each job plain, under `xfertop run`, and with its synchronised truth.
#   bash docs/measurements/h200-2026-12-02-s8/run_trial.sh SECONDS JOB...
# Writes $OUT/<job>-{plain,run,truth}.txt and the run's summary JSON under $OUT/rings-<job>/summaries/.
set -u
secs=${1:?seconds}; shift
here=docs/measurements/h200-2026-12-02-s8/jobs
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.max,pcie.link.width.max --format=csv > "$OUT/machine.txt" 2>&1
python3 -c "import torch; print(torch.__version__)" >> "$OUT/machine.txt" 2>&1
for job in "$@"; do
  t0=$(date +%s)
  timeout 120 python3 $here/gpu_jobs.py "$job" --seconds "$secs" > "$OUT/$job-plain.txt" 2>&1
  XFERTOP_DIR=$OUT/rings-$job timeout 120 python3 -m xfertop run -- python3 $here/gpu_jobs.py "$job" --seconds "$secs" > "$OUT/$job-run.txt" 2>&1
  echo "rc=$?" >> "$OUT/$job-run.txt"
  timeout 120 python3 $here/gpu_jobs.py "$job" --seconds "$secs" --truth > "$OUT/$job-truth.txt" 2>&1
  echo "== $job $(( $(date +%s) - t0 ))s"; tail -n 1 "$OUT/$job-plain.txt"; grep -E "result|where the time|GPU idle|last verdict|rc=" "$OUT/$job-run.txt"; tail -n 1 "$OUT/$job-truth.txt"
done
