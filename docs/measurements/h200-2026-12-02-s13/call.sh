#!/usr/bin/env bash
# One GPU call of session 13, by PART (each fits one 600 s call):
#   PART=b  the live view beside nvitop, this tree and the session's baseline (.base/src: 76a445d's src,
#           carried) in one run; then per-thread CPU and py-spy of this tree's view at PROFILE_HZ (default 1)
#   PART=c  the corpus in MODES (default run,watch,attach) for SCENARIOS
# Run from the repository root with .whl (textual, py-spy, nvitop) and .base carried:
#   PART=b bash docs/measurements/h200-2026-12-02-s13/call.sh
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > "$OUT/pip.txt" 2>&1 || { echo "pip failed"; cat "$OUT/pip.txt"; exit 1; }
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/machine.txt" 2>&1
python3 -c "import torch, textual; print(torch.__version__, textual.__version__)" >> "$OUT/machine.txt" 2>&1
nproc >> "$OUT/machine.txt"; cat "$OUT/machine.txt"
LOAD="python3 -m xfertop.launch.demo_job --phase-seconds 600 --device cuda"
case "${PART:-b}" in
b)
  timeout 260 python3 benchmarks/tui_cpu.py --seconds ${TUI_S:-25} --warmup 3 --rates-hz 1,4 --out /tmp/tui \
    --before .base --load "$LOAD" > "$OUT/tui_cpu.txt" 2>&1
  echo "rc=$?" >> "$OUT/tui_cpu.txt"; grep -E "Hz|rc=|x " "$OUT/tui_cpu.txt"
  for hz in ${PROFILE_HZ:-1}; do
    timeout 70 python3 benchmarks/tui_profile.py /tmp/prof --rate-hz $hz --seconds 20 --load "$LOAD" \
      > "$OUT/tui_profile_${hz}hz.txt" 2>&1
    echo "rc=$?" >> "$OUT/tui_profile_${hz}hz.txt"; head -n 8 "$OUT/tui_profile_${hz}hz.txt"
  done
  ;;
c)
  timeout ${LIMIT:-540} python3 benchmarks/score_scenarios.py --only "$SCENARIOS" --modes "${MODES:-run,watch,attach}" \
    --seconds "${SECONDS_EACH:-5}" --parallel 3 --json "$OUT/score.json" --logs /tmp/score-logs \
    > "$OUT/score.txt" 2>&1
  echo "rc=$?" >> "$OUT/score.txt"; tail -n 45 "$OUT/score.txt"
  ;;
esac
tar czf "$OUT/logs.tgz" -C /tmp $(cd /tmp && ls -d score-logs prof tui 2>/dev/null) 2>/dev/null
