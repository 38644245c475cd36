#!/usr/bin/env bash
# One H200 call (session 9): the GPU gap against torch.profiler, then the scenario corpus under
# `xfertop run` (verdict, exit code, result line and samples/s against the plain run, truth by syncs).
#   bash docs/measurements/h200-2026-12-02-s9/run_call.sh
# Writes $OUT/machine.txt, bvp.txt + bvp.json, score.txt + score.json, logs.tgz.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.max,pcie.link.width.max --format=csv > "$OUT/machine.txt" 2>&1
python3 -c "import torch, lightning, transformers; print(torch.__version__, lightning.__version__, transformers.__version__)" >> "$OUT/machine.txt" 2>&1
nproc >> "$OUT/machine.txt"
timeout 60 python3 benchmarks/breakdown_vs_profiler.py /tmp/bvp > "$OUT/bvp.txt" 2>&1
echo "rc=$?" >> "$OUT/bvp.txt"
cp /tmp/bvp/breakdown_vs_profiler.json "$OUT/bvp.json" 2>/dev/null
cat "$OUT/bvp.txt"
timeout 270 python3 benchmarks/score_scenarios.py --only "${SCENARIOS:-b,h,i,j,l,m,r}" --modes run \
  --seconds "${SECONDS_EACH:-5}" --parallel 3 --json "$OUT/score.json" --logs /tmp/score-logs > "$OUT/score.txt" 2>&1
echo "rc=$?" >> "$OUT/score.txt"
tail -n 40 "$OUT/score.txt"
tar czf "$OUT/logs.tgz" -C /tmp score-logs 2>/dev/null
