#!/usr/bin/env bash
# Session 30's second GPU call: the jobs beside this file (a Hugging Face Trainer evaluating every 50 steps,
# a Lightning Trainer validating every 50 batches) through trial.py (truth, `xfertop run` with live polls
# and its summary, attach), then session 10's user job plain and under `xfertop run`. Run from the
# repository root with .whl carried; everything lands in $OUT/call2.tgz (the device returns few files).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > "$OUT/pip.txt" 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
mkdir -p "$OUT/c"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import sys, torch, transformers, lightning; print(sys.version.split()[0], torch.__version__, transformers.__version__, lightning.__version__)"
  nproc; } > "$OUT/c/machine.txt" 2>&1
SEC=${SEC:-15} timeout 260 python3 docs/measurements/h200-2026-12-05-s30/trial.py j67_hf_eval.py j68_lightning_val.py \
  > "$OUT/c/trial.txt" 2>&1
echo "trial rc=$? at ${SECONDS}s"; grep -v "advice: .xfertop attach" "$OUT/c/trial.txt" | cut -c1-400
USERJOB=1 USERJOB_MODES="plain run" timeout 120 bash docs/measurements/h100-2026-12-05-s29/call.sh 2>&1 | tail -n 12
tar xzf "$OUT/user_job.tgz" -C "$OUT/c" 2>/dev/null; rm -f "$OUT/user_job.tgz"
cp "$OUT/machine.txt" "$OUT/c/machine-s29.txt" 2>/dev/null
tar czf "$OUT/call2.tgz" -C "$OUT" c && rm -rf "$OUT/c"
