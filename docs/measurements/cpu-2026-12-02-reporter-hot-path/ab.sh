#!/bin/bash
# ABAB rounds of benchmarks/reporter_overhead.py --quick: baseline tree vs this one.
. /work/venv/bin/activate
cd /work/wt-rep
out=$1; rounds=${2:-3}
mkdir -p $out
for r in $(seq 1 $rounds); do
  for t in wt-rep-base wt-rep; do
    PYTHONPATH=/work/$t/src python -W ignore /work/$t/benchmarks/reporter_overhead.py $out/$t-$r --quick > $out/$t-$r.txt 2>&1
  done
done
echo done > $out/DONE
