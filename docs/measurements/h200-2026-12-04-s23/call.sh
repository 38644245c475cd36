#!/usr/bin/env bash
# Session 23's GPU calls, each at the same tree (the reporter's cuts and the model's hooks taken off).
# Run from the repository root with .whl carried; $OUT comes back as one tarball, all.tgz. In order:
#   GPUTEST=1   tests/gpu/test_reporter_gpu.py and test_fork_safety_gpu.py (the in-training code on CUDA)
#   OVERHEAD=1  the reporter's per-step cost on this box (benchmarks/reporter_overhead.py --quick)
#   SYNC60=1    scenario h (a sync every step) for 60 s plain, under `xfertop run`, plain again
#   SCENARIOS=  the corpus through session 15's call.sh (MODES, PARALLEL, SECONDS_EACH), given what is
#               left of DEADLINE (seconds since the call began, default 560) as its LIMIT
#   GPUTEST=1 OVERHEAD=1 SYNC60=1 SCENARIOS=m,n1 bash docs/measurements/h200-2026-12-04-s23/call.sh
set -u
R=$OUT; export OUT=/tmp/o; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > "$OUT/pip0.txt" 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
if [ "${GPUTEST:-0}" = 1 ]; then
  timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_reporter_gpu.py \
    tests/gpu/test_fork_safety_gpu.py > "$OUT/pytest_gpu.txt" 2>&1
  echo "gpu tests rc=$? at ${SECONDS}s"; tail -n 6 "$OUT/pytest_gpu.txt"
fi
if [ "${OVERHEAD:-0}" = 1 ]; then
  python3 benchmarks/reporter_overhead.py --quick "$OUT/overhead" > "$OUT/overhead.txt" 2>&1
  echo "overhead rc=$? at ${SECONDS}s"; grep -E "in_process|xfertop_run" "$OUT/overhead.txt"
fi
if [ "${SYNC60:-0}" = 1 ]; then
  for mode in plain run plain2; do
    pre=(); [ "$mode" = run ] && pre=(python3 -m xfertop run --no-summary --)
    "${pre[@]}" python3 benchmarks/scenarios/sync_every_step.py --seconds 60 > "$OUT/sync60-$mode.txt" 2>&1
    echo "sync60 $mode rc=$? at ${SECONDS}s $(grep -m1 '^result' "$OUT/sync60-$mode.txt")"
  done
fi
if [ -n "${SCENARIOS:-}" ]; then
  LIMIT=$(( ${DEADLINE:-560} - SECONDS )) SYNC60=0 bash docs/measurements/h200-2026-12-03-s15/call.sh
fi
tar czf "$R/all.tgz" -C /tmp o
exit 0
