#!/usr/bin/env bash
# Session 22's GPU calls, each at the same tree: issue 20 item 8's corpus in run, watch and attach
# (session 15's call.sh: SCENARIOS, MODES, PARALLEL, SECONDS_EACH, LIMIT, SYNC60), and first, where asked:
#   OVERHEAD=1  the reporter's per-step cost on this box (benchmarks/reporter_overhead.py --quick), after
#               this session's cuts (fewer bytecodes a step, GPU sampling floor 2.5 -> 1 us).
# Run from the repository root with .whl carried; $OUT comes back as one tarball, all.tgz:
#   OVERHEAD=1 SCENARIOS=a,b,c PARALLEL=4 SECONDS_EACH=6 LIMIT=420 bash docs/measurements/h200-2026-12-04-s22/call.sh
set -u
R=$OUT; export OUT=/tmp/o; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > "$OUT/pip0.txt" 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
if [ "${OVERHEAD:-0}" = 1 ]; then
  python3 benchmarks/reporter_overhead.py --quick "$OUT/overhead" > "$OUT/overhead.txt" 2>&1
  echo "overhead rc=$?"; tail -n 22 "$OUT/overhead.txt"
fi
[ -n "${SCENARIOS:-}${SYNC60:-}" ] && bash docs/measurements/h200-2026-12-03-s15/call.sh
tar czf "$R/all.tgz" -C /tmp o
exit 0
