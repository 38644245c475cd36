#!/usr/bin/env bash
# Session 21's third GPU call: the GPU tests that failed in call b (two stale expectations, fixed; two
# async tests that needed pytest-asyncio, now carried), then is_pinned() against the reporter's memo after
# each step's copies, alternating step by step in one run (sync_job_phases.py --pinned-ab), twice.
#   bash docs/measurements/h200-2026-12-03-s21/call_c.sh      (with .whl carried)
set -u
R=$OUT; export OUT=/tmp/o; mkdir -p $OUT
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > "$OUT/pip.txt" 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
python3 -m pytest --version > "$OUT/pytest_version.txt" 2>&1
timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider \
  tests/gpu/test_reporter_gpu.py tests/gpu/test_topology_and_sync_gpu.py tests/gpu/test_viewer_gpu.py \
  > "$OUT/pytest_gpu.txt" 2>&1
echo "gpu tests rc=$?"; tail -n 6 "$OUT/pytest_gpu.txt"
for i in 1 2; do
  timeout 60 python3 benchmarks/sync_job_phases.py --seconds 12 --pinned-ab > "$OUT/pinned-ab-$i.txt" 2>&1
  echo "pinned ab $i rc=$? $(grep -o '"wall_us": {[^}]*}' "$OUT/pinned-ab-$i.txt")"
done
tar czf $R/all.tgz -C /tmp o
