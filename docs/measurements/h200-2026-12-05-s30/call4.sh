#!/usr/bin/env bash
# Session 30's last GPU call: both Trainers of jobs/ under `xfertop run` as users run them (TRUTH_SYNC=0:
# no syncs of the truth's), one after the other so each is its GPU's only user, with `xfertop --once
# --json` polls and each summary; everything lands in $OUT/call4.tgz. Run from the repository root with
# .whl carried. JOBS= picks the jobs (default both), SEC= their seconds (45), POLLS= the poll times (20 28 36 44).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 TRUTH_SYNC=0
J=docs/measurements/h200-2026-12-05-s30/jobs; mkdir -p "$OUT/c"
for job in ${JOBS:-j68_lightning_val j67_hf_eval}; do
  export XFERTOP_DIR=/tmp/r4-$job
  python3 -m xfertop run -- python3 "$J/$job.py" "${SEC:-45}" > "$OUT/c/$job-run.txt" 2>&1 &
  pid=$!
  for t in ${POLLS:-20 28 36 44}; do
    sleep $(( t == 20 ? 20 : 8 ))
    python3 -m xfertop --once --json > "$OUT/c/$job-poll$t.json" 2>&1
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); [print('$job', '${t}s', (i.get('verdict') or {}).get('headline')) for i in d['jobs']['items']]" "$OUT/c/$job-poll$t.json" 2>&1 | cut -c1-220
  done
  wait "$pid"; echo "$job rc=$?"; grep -E "^result|verdicts:|last verdict" "$OUT/c/$job-run.txt" | cut -c1-300
  cp /tmp/r4-$job/*.ring "$OUT/c/" 2>/dev/null
done
tar czf "$OUT/call4.tgz" -C "$OUT" c && rm -rf "$OUT/c"
