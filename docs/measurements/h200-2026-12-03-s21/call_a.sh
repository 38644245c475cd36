#!/usr/bin/env bash
# Session 21's first GPU call, at the head before this session's reporter changes:
#  1. where scenario h's ~7% under `xfertop run` goes: benchmarks/sync_job_phases.py (h's loop, each phase
#     timed on the host without syncing, wall and main-thread CPU; `is_pinned()` timed in the loop) plain,
#     under `run` and `run --no-copy-timing`, ROUNDS rounds, the order rotated each round;
#  2. the reporter's per-step cost (reporter_overhead.py --quick);
#  3. the live view beside nvitop at 1 Hz and 4 Hz (issue 22 item 2), TUI_S seconds each.
# Run with .whl carried (textual, py-spy, nvitop):  bash docs/measurements/h200-2026-12-03-s21/call_a.sh
set -u
R=$OUT; export OUT=/tmp/o; mkdir -p $OUT
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > "$OUT/pip.txt" 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader
  python3 -c "import sys, torch, textual; print(sys.version.split()[0], torch.__version__, textual.__version__)"
  nproc; git rev-parse HEAD 2>/dev/null; } > "$OUT/machine.txt" 2>&1
modes=(plain run nocopy)
for r in $(seq 0 $((${ROUNDS:-3} - 1))); do
  for k in 0 1 2; do
    mode=${modes[$(((r + k) % 3))]}
    case $mode in
      plain) pre=() ;;
      run) pre=(python3 -m xfertop run --no-summary --) ;;
      nocopy) pre=(python3 -m xfertop run --no-summary --no-copy-timing --) ;;
    esac
    timeout 60 "${pre[@]}" python3 benchmarks/sync_job_phases.py --seconds "${SECONDS_EACH:-12}" \
      > "$OUT/phases-$r-$mode.txt" 2>&1
    echo "round $r $mode rc=$? $(grep -m1 -o '"samples_per_s": [0-9.]*' "$OUT/phases-$r-$mode.txt")"
  done
done
timeout 150 python3 benchmarks/reporter_overhead.py --quick "$OUT/overhead" > "$OUT/overhead.txt" 2>&1
echo "overhead rc=$?"; grep -E "us|xfertop_run" "$OUT/overhead.txt" | tail -n 20
timeout 200 python3 benchmarks/tui_cpu.py --seconds "${TUI_S:-15}" --warmup 3 --rates-hz 1,4 --out "$OUT/tui" \
  --load "python3 -m xfertop.launch.demo_job --phase-seconds 600 --device cuda" > "$OUT/tui_cpu.txt" 2>&1
echo "tui rc=$?"; tail -n 12 "$OUT/tui_cpu.txt"
tar czf $R/all.tgz -C /tmp o
