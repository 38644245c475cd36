#!/usr/bin/env bash
# Session 37's first GPU call: the view beside nvitop and two bare Textual apps (benchmarks/textual_floor.py)
# at 1 and 4 Hz; where nvitop's and xfertop's CPU go (py-spy); copy timing's parts on CUDA with more rounds;
# the reporter's overhead rows. Logs in $OUT.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
timeout 250 python3 benchmarks/tui_cpu.py --seconds 20 --warmup 3 --floor --out "$OUT/tui" \
  --load "python3 -m xfertop.launch.demo_job --phase-seconds 600 --device cuda" > "$OUT/tui_cpu.txt" 2>&1
echo "tui_cpu rc=$? at ${SECONDS}s"; grep -E "Hz" "$OUT/tui_cpu.txt"
timeout 90 python3 docs/measurements/h100-2026-12-06-s37/spy_tools.py "$OUT/spy" 20 > "$OUT/spy.txt" 2>&1
echo "spy rc=$? at ${SECONDS}s"; cat "$OUT/spy.txt"
timeout 120 taskset -c 4-7 python3 docs/measurements/h100-2026-12-06-s36/copy_parts.py 5000 cuda 15 \
  > "$OUT/copy_parts.txt" 2>&1
echo "copy_parts rc=$? at ${SECONDS}s"; grep -v Warning "$OUT/copy_parts.txt"
left=$((560 - SECONDS))
timeout $left python3 benchmarks/reporter_overhead.py "$OUT/overhead" --quick --cores 4-7 > "$OUT/overhead.txt" 2>&1
echo "overhead rc=$? at ${SECONDS}s"; tail -n 25 "$OUT/overhead.txt"
