#!/usr/bin/env bash
# The short call, for what device time was left after thirteen failed starts: the reporter's GPU tests,
# then k under `xfertop run` only (with its plain and truth runs), its rings kept. From the repository
# root with .whl carried: bash docs/measurements/gpu-2026-12-07-s43/short_call.sh
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/machine.txt"
XFERTOP_RESULTS_DIR=/tmp/results timeout 130 python3 -m pytest -q -m gpu -p no:cacheprovider \
  tests/gpu/test_reporter_gpu.py > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests rc=$? at ${SECONDS}s"; tail -n 12 "$OUT/gpu_tests.txt"
timeout $((${LIMIT:-200} - SECONDS)) python3 benchmarks/score_scenarios.py --only k --modes run --seconds 6 \
  --json /tmp/results/k.json --logs /tmp/score-logs > "$OUT/score.txt" 2>&1
echo "score rc=$? at ${SECONDS}s"; tail -n 12 "$OUT/score.txt"
tar czf "$OUT/results.tgz" -C /tmp results score-logs 2>/dev/null
