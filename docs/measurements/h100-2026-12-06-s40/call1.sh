#!/usr/bin/env bash
# Session 40's first GPU call: does xfertop change what a real job does, and what does a step cost?
# 1. benchmarks/epochs_job.py (JPEG + torchvision in 4 non-persistent workers, a validation loader each
#    epoch, ResNet-18, bf16, deterministic, exit code 3), plain and under `xfertop run` in alternating
#    pairs (benchmarks/plain_vs_run.py): samples/s, exit codes, printed lines of every run.
# 2. benchmarks/reporter_overhead.py: the reporter's host time per step on CUDA.
# 3. The GPU tests of the reporter and fork safety against the real GPU.
# Logs in $OUT.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch, torchvision; print('torch', torch.__version__, 'torchvision', torchvision.__version__)"
timeout 240 python3 benchmarks/plain_vs_run.py --pairs 3 --warmup 1 --json "$OUT/epochs_pairs.json" \
  -- python3 benchmarks/epochs_job.py --epochs 5 --exit-code 3 > "$OUT/epochs_pairs.txt" 2>&1
echo "epochs rc=$? at ${SECONDS}s"; cat "$OUT/epochs_pairs.txt"
timeout 120 python3 benchmarks/reporter_overhead.py "$OUT" > "$OUT/reporter_overhead.txt" 2>&1
echo "overhead rc=$? at ${SECONDS}s"; tail -40 "$OUT/reporter_overhead.txt"
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_reporter_gpu.py \
  tests/gpu/test_fork_safety_gpu.py > "$OUT/pytest_gpu.txt" 2>&1
echo "pytest rc=$? at ${SECONDS}s"; tail -15 "$OUT/pytest_gpu.txt"
