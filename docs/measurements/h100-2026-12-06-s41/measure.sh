#!/usr/bin/env bash
# Session 41's measuring call (run once for the tree before the session's changes, once after):
# (1) the reporter's cost a step as `xfertop run` puts its hooks on, in one process
#     (benchmarks/reporter_overhead.py's run_hooks_in_one_process row; issue 20's <= 10 us), and the hooks
#     one at a time on CUDA (docs/measurements/cpu-2026-12-06-s40/hooks_one_at_a_time.py, one core, 3 processes);
# (2) where the live view's terminal output goes, row by row, real NVML and the CUDA demo job
#     (docs/measurements/cpu-2026-12-06-s40/bytes_by_row.py); session 40 read 17.7 KB/s here, nvitop 2.1;
# (3) EPOCHS=1: the epochs job plain and under `xfertop run`, 2 pairs after a warm-up, cores 0-7
#     (session 40's call4.sh, which could not start).
# Run from the repository root with .whl carried. Logs in $OUT.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
timeout 200 python3 benchmarks/reporter_overhead.py "$OUT/overhead" --quick --run-rounds 5 > "$OUT/reporter_overhead.txt" 2>&1
echo "overhead rc=$? at ${SECONDS}s"; grep -E "as_run|run_hooks|xfertop_run|direct|copy timing|rounds" "$OUT/reporter_overhead.txt" | tail -14
for i in 1 2 3; do
  taskset -c 1 python3 docs/measurements/cpu-2026-12-06-s40/hooks_one_at_a_time.py 10000 cuda seq 2>/dev/null
done > "$OUT/hooks_seq.txt"; echo "hooks at ${SECONDS}s"; cat "$OUT/hooks_seq.txt"
timeout 55 python3 docs/measurements/cpu-2026-12-06-s40/bytes_by_row.py 30 15 --real --cuda > "$OUT/bytes_by_row.txt" 2>&1
echo "bytes rc=$? at ${SECONDS}s"; cat "$OUT/bytes_by_row.txt"
if [ "${EPOCHS:-0}" = 1 ]; then
  timeout 150 python3 benchmarks/plain_vs_run.py --pairs 2 --warmup 1 --cores 0-7 --json "$OUT/epochs_pairs.json" \
    -- python3 benchmarks/epochs_job.py --epochs 5 --exit-code 3 > "$OUT/epochs_pairs.txt" 2>&1
  echo "epochs rc=$? at ${SECONDS}s"; cat "$OUT/epochs_pairs.txt"
fi
