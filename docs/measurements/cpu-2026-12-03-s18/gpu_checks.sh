#!/usr/bin/env bash
# Session 18's GPU checks for the next H200 run (~2 min, one device call; the corpus and the overhead runs
# stay in the s16/s17 call scripts): the attach GPU tests (c4f8ad0's busy-GPU sync rule on a real job and
# NVML), what NVML's per-process utilisation returns (benchmarks/nvml_process_util.py), and the CUDA
# calls' costs with is_pinned() (reporter_overhead.py's cuda_event_costs, in its --quick run).
# Run from the repository root with .whl carried (py-spy); everything lands in $OUT.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > "$OUT/pip_checks.txt" 2>&1
export PYTHONPATH=/tmp/site:$PWD/src:$PWD/tests PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_attach_gpu.py > "$OUT/attach_gpu_tests.txt" 2>&1
echo "attach gpu tests rc=$?"; tail -n 15 "$OUT/attach_gpu_tests.txt"
python3 benchmarks/nvml_process_util.py "$OUT/npu" --seconds 8 > "$OUT/nvml_process_util.txt" 2>&1
echo "nvml_process_util rc=$?"; cat "$OUT/nvml_process_util.txt"
exit 0
