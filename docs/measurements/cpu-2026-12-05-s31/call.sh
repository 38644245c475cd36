#!/usr/bin/env bash
# For the next GPU session (not run in session 31: no device time was left). This session's trial jobs on
# the GPU: each job's truth (synchronised per phase), then under `xfertop run` (live polls, its summary)
# and attached, without the truth's syncs (trial.py). Run from the repository root with .whl carried:
#     bash docs/measurements/cpu-2026-12-05-s31/call.sh               # ~8 min with the default jobs
#     JOBS="j75_amp_gradscaler.py" SEC=20 bash docs/measurements/cpu-2026-12-05-s31/call.sh
# Output: $OUT/trial.txt.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 SEC=${SEC:-16} TRIAL_LIBS=/tmp/site
D=docs/measurements/cpu-2026-12-05-s31
# j75 (fp16 + GradScaler: a sync inside every optimizer step), j74/j76/j63/j11 (validation inside a
# plain loop), j69 (HF gradient accumulation), j72 (Lightning manual optimization).
timeout 560 python3 $D/trial.py ${JOBS:-j75_amp_gradscaler.py j74_val_forward_heavy.py j76_val_at_top.py \
  ../cpu-2026-12-05-s29/jobs/j63_val_every_n.py ../cpu-2026-12-05-s26/jobs/j11_heavy_val.py \
  ../h200-2026-12-05-s30/jobs/j69_hf_accumulate.py j72_lightning_manual.py} 2>&1 | tee "$OUT/trial.txt" | cut -c1-400
