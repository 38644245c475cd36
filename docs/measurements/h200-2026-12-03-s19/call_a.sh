#!/usr/bin/env bash
# Session 19's first GPU call (~7 min): session 18's GPU checks (attach GPU tests, NVML per-process
# utilisation), where copy timing spends on the H200 (py-spy by xfertop line), the reporter's per-step
# cost with is_pinned()'s cost, and the 60 s sync-every-step pair. Run from the repository root with
# .whl carried; the device tool returns few files, so everything is tarred into $OUT/all.tgz.
set -u
R=$OUT; export OUT=/tmp/o; mkdir -p $OUT
bash docs/measurements/cpu-2026-12-03-s18/gpu_checks.sh
bash docs/measurements/h200-2026-12-03-s17/overhead_profile.sh
OVERHEAD=1 SYNC60=1 bash docs/measurements/h200-2026-12-03-s16/call.sh
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv > $OUT/gpu.txt 2>&1
tar czf $R/all.tgz -C /tmp o
