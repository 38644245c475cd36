#!/bin/bash
# usage: driver.sh JOB   (runs the 4 measurements for JOB.py, one after another; outputs in out/JOB/)
set -u
cd "$(dirname "$0")"
. /work/venv/bin/activate
J=$1; O=out/$J; mkdir -p $O
now() { date +%s.%N; }
t0=$(now); python $J.py --truth >$O/truth.stdout 2>$O/truth.stderr; echo "truth rc=$? wall=$(echo "$(now)-$t0"|bc)" >$O/meta.txt
t0=$(now); python $J.py >$O/plain.stdout 2>$O/plain.stderr; echo "plain rc=$? wall=$(echo "$(now)-$t0"|bc)" >>$O/meta.txt
t0=$(now); xfertop run -- python $J.py >$O/run.stdout 2>$O/run.stderr; echo "run rc=$? wall=$(echo "$(now)-$t0"|bc)" >>$O/meta.txt
# live: second run, --once --json at ~10 s, attach at ~13 s
t0=$(now); xfertop run -- python $J.py >$O/live_run.stdout 2>$O/live_run.stderr & RP=$!
sleep 10; xfertop --once --json >$O/once.json 2>$O/once.stderr; echo "once rc=$? at=$(echo "$(now)-$t0"|bc)" >>$O/meta.txt
sleep 1.5
CP=$(pgrep -P $RP | head -1); [ -z "$CP" ] && CP=$RP
ps -o pid,ppid,args -p $RP,$CP >>$O/meta.txt
xfertop attach $CP --once --json >$O/attach.json 2>$O/attach.stderr; echo "attach pid=$CP rc=$? at=$(echo "$(now)-$t0"|bc)" >>$O/meta.txt
wait $RP; echo "live_run rc=$? wall=$(echo "$(now)-$t0"|bc)" >>$O/meta.txt
cmp -s $O/plain.stdout $O/run.stdout && echo "stdout plain==run: identical" >>$O/meta.txt || echo "stdout plain vs run: DIFFER" >>$O/meta.txt
cat $O/meta.txt
