#!/bin/bash
cd /tmp/trial/jobs && . /work/venv/bin/activate
export PYTHONPATH=/tmp/trial/pylib
mkdir -p /tmp/trial/out
run() { # name, args...
  n=$1; shift
  /usr/bin/time -f "%e" -o /tmp/trial/out/$n.plain.time python "$@" >/tmp/trial/out/$n.plain.out 2>/tmp/trial/out/$n.plain.err; echo $? >/tmp/trial/out/$n.plain.rc
  /usr/bin/time -f "%e" -o /tmp/trial/out/$n.x.time xfertop run -- python "$@" >/tmp/trial/out/$n.x.out 2>/tmp/trial/out/$n.x.err; echo $? >/tmp/trial/out/$n.x.rc
  echo "done $n"
}
for j in "$@"; do
  case $j in
    1a) run job1a job1_text.py --workers 0;;
    1b) run job1b job1_text.py --workers 2;;
    2) run job2 job2_metrics.py;;
    3) run job3 job3_ckpt.py;;
    4) run job4 job4_images.py;;
    5) run job5 job5_listdicts.py;;
    6) run job6 job6_bigmlp.py;;
  esac
done
