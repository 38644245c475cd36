#!/usr/bin/env bash
# Session 24's GPU calls. Run from the repository root with .whl carried; $OUT comes back as all.tgz.
#   GPUTEST=1   tests/gpu/test_reporter_gpu.py and test_fork_safety_gpu.py (the in-training code on CUDA)
#   OVERHEAD=1  benchmarks/reporter_overhead.py --quick
#   PHASES=N    benchmarks/sync_job_phases.py (scenario h's loop, each phase timed) for N s each, in turn:
#               plain, run, run --no-copy-timing, plain, run: which phase grows under the reporter
#   SPY=S       py-spy record (idle stacks too, 250 Hz) of scenario h's job for S s, plain then under run
#   SCENARIOS=  the corpus through session 15's call.sh (MODES, PARALLEL, SECONDS_EACH), given what is
#               left of DEADLINE (seconds since the call began, default 560) as its LIMIT
set -u
R=$OUT; export OUT=/tmp/o; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > "$OUT/pip0.txt" 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
if [ "${GPUTEST:-0}" = 1 ]; then
  timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_reporter_gpu.py \
    tests/gpu/test_fork_safety_gpu.py > "$OUT/pytest_gpu.txt" 2>&1
  echo "gpu tests rc=$? at ${SECONDS}s"; tail -n 4 "$OUT/pytest_gpu.txt"
fi
if [ "${PHASES:-0}" != 0 ]; then
  n=0
  for mode in plain run run-nocopy plain run; do
    n=$((n + 1)); pre=()
    [ "$mode" = run ] && pre=(python3 -m xfertop run --no-summary --)
    [ "$mode" = run-nocopy ] && pre=(python3 -m xfertop run --no-summary --no-copy-timing --)
    "${pre[@]}" python3 benchmarks/sync_job_phases.py --seconds "$PHASES" --json "$OUT/phases$n-$mode.json" \
      > "$OUT/phases$n-$mode.txt" 2>&1
    echo "phases $n $mode rc=$? at ${SECONDS}s"
  done
fi
if [ "${SPY:-0}" != 0 ]; then
  for mode in plain run; do
    pre=(); [ "$mode" = run ] && pre=(python3 -m xfertop run --no-summary --)
    "${pre[@]}" python3 benchmarks/scenarios/sync_every_step.py --seconds $((SPY + 12)) > "$OUT/spy-$mode-job.txt" 2>&1 &
    top=$!; sleep 10
    job=$top; [ "$mode" = run ] && job=$(pgrep -P "$top" | head -n 1)
    timeout $((SPY + 10)) py-spy record --idle --rate 250 --duration "$SPY" --format raw --pid "$job" \
      -o "$OUT/spy-$mode.txt" > "$OUT/spy-$mode-log.txt" 2>&1
    echo "spy $mode rc=$? job=$job at ${SECONDS}s"; wait "$top"
  done
fi
if [ "${OVERHEAD:-0}" = 1 ]; then
  python3 benchmarks/reporter_overhead.py --quick "$OUT/overhead" > "$OUT/overhead.txt" 2>&1
  echo "overhead rc=$? at ${SECONDS}s"; grep -E "in_process|xfertop_run" "$OUT/overhead.txt"
fi
if [ -n "${SCENARIOS:-}" ]; then
  LIMIT=$(( ${DEADLINE:-560} - SECONDS )) SYNC60=0 bash docs/measurements/h200-2026-12-03-s15/call.sh
fi
tar czf "$R/all.tgz" -C /tmp o
exit 0
