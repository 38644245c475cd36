#!/usr/bin/env bash
# Every GPU figure in docs/ comes from this script, run on the lent H200 machine through the device
# tool from the repository root, with the wheels of the packages that machine lacks in .whl/:
#   bash benchmarks/h200_batch.sh STAGE      (STAGE: issue10 | issue11 | corpus | scenarios | tests | bench | reporter | viewer | final | final3 | cpu60 | cpu | mid | gpm | diag | retest; RETEST=test ids)
# Results land in $OUT/results-STAGE.tgz (logs and JSON); docs/measurements/ keeps what we quote.
set -u
stage=${1:?stage}
res=/tmp/res-$stage; mkdir -p "$res"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > "$res/pip.txt" 2>&1 || echo "wheel install failed (see pip.txt)"
# That machine sets PYTHONDONTWRITEBYTECODE=1, so nothing would ever be byte-compiled and every start would
# compile Textual (or nvitop) from source: 0.7-1.0 s of the first frame. A user's `pip install` compiles
# the bytecode, and Python caches it for an editable install: compile once, as they would have.
python3 -m compileall -q -j 0 /tmp/site src > "$res/compileall.txt" 2>&1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 XFERTOP_RESULTS_DIR=$res
export XFERTOP_RECORDS=$res/records; mkdir -p "$XFERTOP_RECORDS"
step() { local name=$1; shift; local t0=$(date +%s); echo "== $name: $*"; timeout "${LIMIT:-300}" "$@" > "$res/$name.txt" 2>&1; local rc=$?; echo "   rc=$rc $(( $(date +%s) - t0 ))s"; tail -n "${TAILN:-6}" "$res/$name.txt"; }
{ nvidia-smi; python3 -c "import torch, textual, rich; print(torch.__version__, textual.__version__, rich.__version__)"; } > "$res/machine.txt" 2>&1
case $stage in
  tests)
    LIMIT=420 TAILN=25 step pytest_gpu python3 -m pytest -m gpu tests/gpu -v -p no:cacheprovider --deselect tests/gpu/test_viewer_gpu.py
    step proc_pinned python3 benchmarks/proc_pinned_probe.py "$res/proc_pinned"
    step capture_sysfs python3 benchmarks/capture_sysfs.py "$res/sysfs" --name h200
    step pcie_coverage python3 benchmarks/pcie_coverage.py "$res/pcie_coverage" --seconds 20
    ;;
  bench)
    TAILN=12 step cuda_ref python3 benchmarks/bench_vs_cuda_reference.py --json "$res/cuda_ref.json"
    TAILN=40 step check bash -c "s=\$(date +%s.%N); python3 -m xfertop check --records $res/records; rc=\$?; e=\$(date +%s.%N); python3 -c \"print('check wall s', \$e-\$s)\"; exit \$rc"
    LIMIT=240 TAILN=30 step reporter_overhead python3 benchmarks/reporter_overhead.py "$res/reporter_overhead"
    step ring_ingest python3 benchmarks/ring_ingest.py "$res/ring_ingest" --seconds 30
    ;;
  reporter)
    LIMIT=300 TAILN=30 step reporter_overhead python3 benchmarks/reporter_overhead.py "$res/reporter_overhead"
    LIMIT=120 TAILN=12 step overhead_every_step env XFERTOP_GPU_SAMPLING=off python3 benchmarks/reporter_overhead.py "$res/every_step" --quick
    TAILN=15 step pytest_reporter_attach python3 -m pytest -m gpu -p no:cacheprovider tests/gpu/test_reporter_gpu.py tests/gpu/test_attach_gpu.py
    ;;
  final)
    # The issue's benchmark: 60 s per row, 1 and 4 Hz, nvitop beside xfertop in the same run, with PCIe
    # measured over all the time: GPM (the default on this Hopper GPU), then xfertop alone with the
    # byte-counter poller (--pcie counters) against the same nvitop rows. Fits the 10-minute call.
    load="python3 -m xfertop.launch.demo_job --phase-seconds 900 --device cuda"
    LIMIT=60 TAILN=6 step pytest_viewer python3 -m pytest -m gpu tests/gpu/test_viewer_gpu.py -p no:cacheprovider
    step startup python3 benchmarks/startup.py --runs 7 --out "$res/startup"
    LIMIT=300 TAILN=8 step tui_cpu python3 benchmarks/tui_cpu.py --seconds 60 --rates-hz 1,4 --out "$res/tui_cpu" --load "$load"
    LIMIT=160 TAILN=8 step tui_cpu_counters python3 benchmarks/tui_cpu.py --seconds 60 --rates-hz 1,4 --no-nvitop --out "$res/tui_cpu_counters" --load "$load" --xfertop-args "--pcie counters"
    LIMIT=40 TAILN=6 step pcie_coverage python3 benchmarks/pcie_coverage.py "$res/pcie_coverage" --seconds 20
    LIMIT=40 TAILN=10 step profile_4hz python3 benchmarks/tui_profile.py "$res/profile" --rate-hz 4 --seconds 12 --load "$load"
    ;;
  final3)
    # The third session's record: the GPU source and host pinned-memory tests against the real GPU, the
    # viewer test, start-up, the issue's 60 s CPU rows beside nvitop, and where each thread's CPU goes.
    load="python3 -m xfertop.launch.demo_job --phase-seconds 900 --device cuda"
    LIMIT=150 TAILN=12 step pytest_gpu python3 -m pytest -m gpu tests/gpu/test_gpu_source_real.py tests/gpu/test_host_pinned_real.py tests/gpu/test_viewer_gpu.py -p no:cacheprovider -rA
    step startup python3 benchmarks/startup.py --runs 7 --out "$res/startup"
    LIMIT=300 TAILN=8 step tui_cpu python3 benchmarks/tui_cpu.py --seconds 60 --rates-hz 1,4 --out "$res/tui_cpu" --load "$load"
    LIMIT=40 TAILN=10 step profile_4hz python3 benchmarks/tui_profile.py "$res/profile" --rate-hz 4 --seconds 15 --load "$load"
    LIMIT=50 TAILN=10 step profile_1hz python3 benchmarks/tui_profile.py "$res/profile" --rate-hz 1 --seconds 20 --load "$load"
    ;;
  cpu60)
    # The issue's CPU rows only (60 s each, 1 and 4 Hz, nvitop beside xfertop): a repeat for the noise.
    LIMIT=300 TAILN=8 step tui_cpu python3 benchmarks/tui_cpu.py --seconds 60 --rates-hz 1,4 --out "$res/tui_cpu" --load "python3 -m xfertop.launch.demo_job --phase-seconds 900 --device cuda"
    ;;
  cpu)
    # CPU rows only, 30 s each (a quick re-check when little device time is left).
    LIMIT=200 TAILN=8 step tui_cpu python3 benchmarks/tui_cpu.py --seconds 30 --rates-hz 1,4 --out "$res/tui_cpu" --load "python3 -m xfertop.launch.demo_job --phase-seconds 900 --device cuda"
    ;;
  mid)
    # A progress check: the CPU rows (30 s) and where each thread's CPU goes at 1 and 4 Hz.
    load="python3 -m xfertop.launch.demo_job --phase-seconds 900 --device cuda"
    LIMIT=200 TAILN=8 step tui_cpu python3 benchmarks/tui_cpu.py --seconds 30 --rates-hz 1,4 --out "$res/tui_cpu" --load "$load"
    LIMIT=60 TAILN=8 step profile_1hz python3 benchmarks/tui_profile.py "$res/profile" --rate-hz 1 --seconds 30 --load "$load"
    LIMIT=40 TAILN=8 step profile_4hz python3 benchmarks/tui_profile.py "$res/profile" --rate-hz 4 --seconds 15 --load "$load"
    ;;
  gpm)
    load="python3 -m xfertop.launch.demo_job --phase-seconds 600 --device cuda"
    LIMIT=120 TAILN=60 step nvml_costs python3 benchmarks/nvml_costs.py "$res/nvml_costs"
    LIMIT=150 TAILN=16 step pytest_sources_viewer python3 -m pytest -m gpu tests/gpu/test_gpu_source_real.py tests/gpu/test_viewer_gpu.py -p no:cacheprovider -rA
    step startup python3 benchmarks/startup.py --runs 5 --out "$res/startup"
    LIMIT=200 TAILN=12 step tui_cpu python3 benchmarks/tui_cpu.py --seconds 25 --rates-hz 1,4 --out "$res/tui_cpu" --load "$load"
    LIMIT=90 TAILN=12 step profile_1hz python3 benchmarks/tui_profile.py "$res/profile" --rate-hz 1 --seconds 20 --load "$load"
    LIMIT=90 TAILN=12 step profile_1hz_counters python3 benchmarks/tui_profile.py "$res/profile" --rate-hz 1 --seconds 20 --load "$load" --xfertop-args "--pcie counters"
    LIMIT=40 step pcie_coverage python3 benchmarks/pcie_coverage.py "$res/pcie_coverage" --seconds 20
    ;;
  diag)
    LIMIT=60 TAILN=8 step pytest_viewer python3 -m pytest -m gpu tests/gpu/test_viewer_gpu.py -p no:cacheprovider
    LIMIT=120 TAILN=60 step nvml_costs python3 benchmarks/nvml_costs.py "$res/nvml_costs"
    load="python3 -m xfertop.launch.demo_job --phase-seconds 600 --device cuda"
    LIMIT=90 TAILN=45 step profile_1hz python3 benchmarks/tui_profile.py "$res/profile" --rate-hz 1 --seconds 20 --load "$load"
    LIMIT=90 TAILN=45 step profile_4hz python3 benchmarks/tui_profile.py "$res/profile" --rate-hz 4 --seconds 15 --load "$load"
    TAILN=3 LIMIT=30 step importtime_full bash -c "python3 -X importtime -c 'import xfertop.cli.main, xfertop.cli.viewer, xfertop.ui.app' 2>&1 | sort -t'|' -k2 -n | tail -60"
    TAILN=3 LIMIT=30 step importtime_nvitop bash -c "python3 -X importtime -c 'import nvitop.cli' 2>&1 | sort -t'|' -k2 -n | tail -30"
    TAILN=20 LIMIT=60 step import_wall bash -c "python3 -c 'import sys; print(sys.version, sys.flags.dont_write_bytecode, sys.pycache_prefix)'; env | grep -i pythondont; ls /tmp/site/textual/__pycache__ | wc -l; for i in 1 2 3; do /usr/bin/time -f '%e s pass' python3 -c pass; /usr/bin/time -f '%e s textual.app' python3 -c 'import textual.app'; /usr/bin/time -f '%e s cli.main' python3 -c 'import xfertop.cli.main'; /usr/bin/time -f '%e s nvitop.cli' python3 -c 'import nvitop.cli'; done; python3 -c 'import site; print(site.getsitepackages())'; ls \$(python3 -c 'import site; print(site.getsitepackages()[0])') | grep -c pth"
    ;;
  retest)
    TAILN=15 step pytest_retest python3 -m pytest -m gpu -p no:cacheprovider ${RETEST:-tests/gpu}
    ;;
  viewer)
    step once bash -c "python3 -m xfertop --once --json | head -80"
    step startup python3 benchmarks/startup.py --runs 7 --out "$res/startup"
    LIMIT=260 TAILN=20 step tui_cpu python3 benchmarks/tui_cpu.py --seconds 40 --rates-hz 1,4 --out "$res/tui_cpu" --load "python3 -m xfertop.launch.demo_job --phase-seconds 600 --device cuda"
    step pytest_viewer python3 -m pytest -m gpu tests/gpu/test_viewer_gpu.py -p no:cacheprovider
    TAILN=12 step attach_cost python3 benchmarks/attach_cost.py "$res/attach_cost" --device cuda --pairs 5 --block-s 5 --blocking
    ;;
  issue10)
    # Never break the job (issue 10): the fork reproduction on the old and the new reporter, the GPU tests,
    # `xfertop demo` through both phases in a pty at 160x48 and 80x24 (screens as text), terminal close.
    mkdir -p /tmp/oldsrc && cp -r src/xfertop /tmp/oldsrc/ && cp .old/reporter_init.py /tmp/oldsrc/xfertop/reporter/__init__.py
    TAILN=4 LIMIT=120 step repro_plain python3 .old/repro.py
    TAILN=8 LIMIT=120 step repro_run_old env PYTHONPATH=/tmp/site:/tmp/oldsrc python3 -m xfertop.cli.run -- python3 .old/repro.py
    TAILN=4 LIMIT=120 step repro_run_new python3 -m xfertop.cli.run -- python3 .old/repro.py
    TAILN=4 LIMIT=120 step repro_copy_timing_new python3 -m xfertop.cli.run --copy-timing -- python3 .old/repro.py
    LIMIT=300 TAILN=14 step pytest_gpu python3 -m pytest -m gpu tests/gpu/test_fork_safety_gpu.py tests/gpu/test_reporter_gpu.py -p no:cacheprovider -rA
    LIMIT=80 TAILN=4 step demo_run_160x48 python3 benchmarks/demo_screens.py "$res" --columns 160 --rows 48 --phase-seconds 15 --seconds 45
    LIMIT=80 TAILN=4 step demo_run_80x24 python3 benchmarks/demo_screens.py "$res" --columns 80 --rows 24 --phase-seconds 15 --seconds 45
    if [ -f benchmarks/terminal_close.py ]; then LIMIT=200 TAILN=12 step terminal_close python3 benchmarks/terminal_close.py ${TERMINAL_CLOSE_ARGS:-}; fi
    ;;
  issue11)
    # Verdicts (issue 11) after the reporter's epoch-start and evidence changes: the reporter and
    # fork-safety GPU tests, then the scenarios named by SCENARIOS in SCENARIO_MODES.
    LIMIT=${PYTEST_LIMIT:-200} TAILN=8 step pytest_gpu python3 -m pytest -m gpu -p no:cacheprovider tests/gpu/test_reporter_gpu.py tests/gpu/test_fork_safety_gpu.py -rfE
    LIMIT=${SCENARIO_LIMIT:-400} TAILN=45 step scenarios python3 benchmarks/score_scenarios.py --only "${SCENARIOS:-d,e,h,i,m}" --modes "${SCENARIO_MODES:-run,watch}" --seconds "${SCENARIO_SECONDS:-8}" --parallel "${SCENARIO_PARALLEL:-4}" --json "$res/scenarios.json" --logs "$res/scenario_logs"
    ;;
  corpus)
    # The whole corpus in every mode (issue 11), split over calls: PARALLEL_IDS share the GPU four at a
    # time (host-bound: their truth is the CPU's), SERIAL_IDS run alone (their samples/s and NVML
    # evidence need the GPU to themselves; l, the Lightning job, is here for its samples/s alone).
    if [ -n "${PARALLEL_IDS:-}" ]; then
      LIMIT=${PARALLEL_LIMIT:-300} TAILN=30 step corpus_parallel python3 benchmarks/score_scenarios.py --only "$PARALLEL_IDS" --modes "${SCENARIO_MODES:-run,watch,attach}" --seconds "${SCENARIO_SECONDS:-6}" --parallel 4 --json "$res/corpus_parallel.json" --logs "$res/logs_parallel"
    fi
    if [ -n "${SERIAL_IDS:-}" ]; then
      LIMIT=${SERIAL_LIMIT:-300} TAILN=30 step corpus_serial python3 benchmarks/score_scenarios.py --only "$SERIAL_IDS" --modes "${SCENARIO_MODES:-run,watch,attach}" --seconds "${SCENARIO_SECONDS:-6}" --parallel 1 --json "$res/corpus_serial.json" --logs "$res/logs_serial"
    fi
    ;;
  issue14)
    # Two GPUs of one host (issue 14), on nvidia-h200-x2: the DDP job over NCCL (NVLink multicast off)
    # slowed and balanced, under xfertop run and attach; --once --json with both GPUs, also with
    # CUDA_VISIBLE_DEVICES reversed; bench case k (every GPU at once); the topology matrix beside
    # nvidia-smi topo -m; every GPU test.
    export NCCL_NVLS_ENABLE=0
    TAILN=30 LIMIT=30 step topo_nvidia_smi nvidia-smi topo -m
    TAILN=40 LIMIT=40 step topology_once bash -c "python3 -m xfertop --once --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps(d[\"topology\"], indent=1)[:6000])'"
    LIMIT=300 TAILN=30 step ddp_scenarios python3 benchmarks/score_scenarios.py --only o,o0 --modes run,attach --seconds 15 --parallel 1 --json "$res/ddp.json" --logs "$res/ddp_logs"
    LIMIT=120 TAILN=20 step once_two_gpus bash -c 'rm -rf /tmp/xd && export XFERTOP_DIR=/tmp/xd; python3 -m xfertop run --no-summary -- python3 benchmarks/scenarios/ddp_straggler.py --seconds 30 & sleep 25; python3 -m xfertop --once --json > /tmp/once.json; CUDA_VISIBLE_DEVICES=1,0 python3 -m xfertop --once --json > /tmp/once_rev.json; wait; python3 - <<EOF
import json
for name in ("/tmp/once.json", "/tmp/once_rev.json"):
    d = json.load(open(name))
    print(name, [(g["index"], g["bus_id"], [p["pid"] for p in g["processes"]]) for g in d["gpus"]])
    for j in d["jobs"]["items"]:
        print(" ", j["name"], j["verdict"]["headline"], [(r["rank"], r["pid"], r["device"]) for r in j["ranks"]])
EOF'
    LIMIT=200 TAILN=20 step bench_all_gpus python3 -m xfertop bench all_gpus --json --no-save
    LIMIT=300 TAILN=20 step pytest_gpu python3 -m pytest -m gpu -p no:cacheprovider tests/gpu -rfE
    ;;
  scenarios)
    # The verdict corpus (issue 11) on the GPU: the scenarios named by SCENARIOS (default: the ones the
    # H200 trial got wrong, and their neighbours) under xfertop run and an injected xfertop.watch, with
    # the ring-reader fix's GPU test again first.
    LIMIT=150 TAILN=6 step pytest_reporter_run python3 -m pytest -m gpu -p no:cacheprovider tests/gpu/test_reporter_gpu.py -k "xfertop_run" -rA
    LIMIT=${SCENARIO_LIMIT:-420} TAILN=40 step scenarios python3 benchmarks/score_scenarios.py --only "${SCENARIOS:-a,c,d,f,g,h,i,j,l,m}" --modes "${SCENARIO_MODES:-run}" --seconds "${SCENARIO_SECONDS:-10}" --parallel 4 --json "$res/scenarios.json" --logs "$res/scenario_logs"
    ;;
esac
tar czf "$OUT/results-$stage.tgz" -C "$res" .
