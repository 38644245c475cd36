#!/usr/bin/env bash
# Session 32's third GPU call: session 32's new trial jobs (docs/measurements/cpu-2026-12-05-s32/jobs) and
# j75 again (its healthy headline and spikes advice changed), each job's truth (synchronised per phase),
# then under `xfertop run` (live polls, summary) and attached at 0.7 of its run (CUDA's start-up held the
# attaches at 0.45 of session 32's first calls). Run from the repository root with .whl carried:
#     bash docs/measurements/h100-2026-12-05-s32/call3.sh          # JOBS=, SEC= (16) override
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 SEC=${SEC:-16} TRIAL_LIBS=/tmp/site \
  ATTACH_AT=${ATTACH_AT:-0.7}
S=../cpu-2026-12-05-s32/jobs
timeout ${LIMIT:-560} python3 docs/measurements/cpu-2026-12-05-s31/trial.py ${JOBS:-j75_amp_gradscaler.py \
  $S/j83_clip_skip.py $S/j80_profiler.py $S/j77_distill.py $S/j82_curriculum.py $S/j79_mixup_loop.py} 2>&1 \
  | tee "$OUT/trial.txt" | cut -c1-500
