#!/usr/bin/env bash
# Session 19's second GPU call (<= 9.5 min): n2's attach and the five scenarios session 17 could not
# score, at this tree, in run, watch and attach.
set -u
R=$OUT; export OUT=/tmp/o; mkdir -p $OUT
SCENARIOS=${SCENARIOS:-n2,q,r,u,g,h} PARALLEL=4 SECONDS_EACH=6 LIMIT=${LIMIT:-540} \
  bash docs/measurements/h200-2026-12-03-s16/call.sh
tar czf $R/all.tgz -C /tmp o
