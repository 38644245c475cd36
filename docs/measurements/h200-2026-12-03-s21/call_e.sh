#!/usr/bin/env bash
# Session 21's fifth GPU call: the sync-bound GPU test three times with its job's sync wait well clear of
# the 10% bar (12 ms of _sleep asked, 20 ms of host sleep; call d read it loop-bound once in two at 4 ms).
#   bash docs/measurements/h200-2026-12-03-s21/call_e.sh      (with .whl carried)
set -u
R=$OUT; export OUT=/tmp/o; mkdir -p $OUT
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > "$OUT/pip.txt" 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 XFERTOP_RESULTS_DIR=$OUT
for i in 1 2 3; do
  timeout 60 python3 -m pytest -q -m gpu -p no:cacheprovider \
    "tests/gpu/test_topology_and_sync_gpu.py::test_a_job_that_stalls_its_gpu_from_the_host_is_sync_bound" \
    > "$OUT/pytest_sync_$i.txt" 2>&1
  echo "sync test $i rc=$? $(tail -n 1 "$OUT/pytest_sync_$i.txt")"
done
tar czf $R/all.tgz -C /tmp o
