#!/usr/bin/env bash
# Session 36's second GPU call: j90 (torch.func per-sample gradients) run and attached again at the tree
# whose attach counts torch.func's frames as the model's step; copy timing's cost per `.to(cuda)` part by
# part (copy_parts.py, pinned to four cores); then more pinned 60 s pairs for issue 20's >= 0.98 with the
# time left. Logs in $OUT.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > "$OUT/machine.txt" 2>&1
SEC=12 TRIAL_LIBS=/tmp/site ATTACH_AT=0.7 timeout 150 python3 docs/measurements/cpu-2026-12-05-s31/trial.py \
  ../cpu-2026-12-06-s35/jobs/j90_functorch_sgd.py > "$OUT/trial_j90.txt" 2>&1
echo "trial rc=$? at ${SECONDS}s"; grep -E "=====|truth|last verdict|attach" "$OUT/trial_j90.txt" | cut -c1-260
timeout 150 taskset -c 4-7 python3 docs/measurements/h100-2026-12-06-s36/copy_parts.py 5000 cuda 7 \
  > "$OUT/copy_parts.txt" 2>&1
echo "copy_parts rc=$? at ${SECONDS}s"; grep -v Warn "$OUT/copy_parts.txt"
left=$((585 - SECONDS)); pairs=$((left / 130))
if [ "$pairs" -ge 1 ]; then
  timeout $((left)) taskset -c 4-7 python3 benchmarks/plain_vs_run.py --pairs "$pairs" --json "$OUT/h_pairs.json" \
    -- python3 benchmarks/scenarios/sync_every_step.py --seconds 60 > "$OUT/h_pairs.txt" 2>&1
  echo "h pairs ($pairs) rc=$? at ${SECONDS}s"; tail -n 8 "$OUT/h_pairs.txt"
fi
