#!/bin/bash
# usage: runall.sh JOB   (one job, all four runs, sequential)
cd /work/main && . /work/venv/bin/activate && cd docs/measurements/cpu-2026-12-07-s47/trial
J=$1; O=out/$J; mkdir -p $O
python $J.py --truth > $O/truth.out 2> $O/truth.err; echo "truth rc=$?" > $O/rcs
s=$(date +%s.%N); python $J.py > $O/plain.out 2> $O/plain.err; rc=$?; e=$(date +%s.%N)
echo "plain rc=$rc wall=$(python -c "print(round($e-$s,2))")" >> $O/rcs
s=$(date +%s.%N); xfertop run -- python $J.py > $O/run.out 2> $O/run.err; rc=$?; e=$(date +%s.%N)
echo "run rc=$rc wall=$(python -c "print(round($e-$s,2))")" >> $O/rcs
xfertop run -- python $J.py > $O/run2.out 2> $O/run2.err &
XP=$!
sleep 10
xfertop --once --json > $O/once.json 2> $O/once.err; echo "once rc=$?" >> $O/rcs
sleep 3
ps -o pid,ppid,args --ppid $XP > $O/children.txt
JP=$(ps -o pid= --ppid $XP | head -1 | tr -d ' ')
ps -o pid,ppid,args -p $JP >> $O/children.txt
xfertop attach $JP --once --json > $O/attach.json 2> $O/attach.err; echo "attach rc=$? pid=$JP" >> $O/rcs
wait $XP; echo "run2 rc=$?" >> $O/rcs
cat $O/rcs
