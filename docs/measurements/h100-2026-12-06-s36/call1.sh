#!/usr/bin/env bash
# Session 36's first GPU call: three jobs past their loader's end (itertools.cycle, torch.func per-sample
# gradients, Lightning's prefetching fetcher) each truth-run, then under `xfertop run` and attached
# (trial.py), at a tree whose run summary reads a fast ring often enough to count its steps; then issue 20's
# >= 0.98 on more pinned 60 s pairs if time is left. Logs in $OUT.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > "$OUT/machine.txt" 2>&1
SEC=12 TRIAL_LIBS=/tmp/site ATTACH_AT=0.7 timeout 300 python3 docs/measurements/cpu-2026-12-05-s31/trial.py \
  ../cpu-2026-12-06-s35/jobs/j89_cycle_loader.py ../cpu-2026-12-06-s35/jobs/j90_functorch_sgd.py \
  ../h200-2026-12-05-s30/jobs/j68_lightning_val.py > "$OUT/trial.txt" 2>&1
echo "trial rc=$? at ${SECONDS}s"; grep -E "=====|truth|summary:|last verdict|attach:|overwritten" "$OUT/trial.txt" | cut -c1-220
left=$((580 - SECONDS)); pairs=$((left / 130))
if [ "$pairs" -ge 1 ]; then
  timeout $((left)) taskset -c 4-7 python3 benchmarks/plain_vs_run.py --pairs "$pairs" --json "$OUT/h_pairs.json" \
    -- python3 benchmarks/scenarios/sync_every_step.py --seconds 60 > "$OUT/h_pairs.txt" 2>&1
  echo "h pairs ($pairs) rc=$? at ${SECONDS}s"; tail -n 8 "$OUT/h_pairs.txt"
fi
