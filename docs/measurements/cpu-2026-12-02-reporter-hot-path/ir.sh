#!/bin/bash
# ir.sh TREE MODE VARIANT -> instructions per step (difference between 1000 and 11000 steps)
tree=$1; mode=$2; var=$3
. /work/venv/bin/activate
ir() { PYTHONPATH=/work/$tree/src valgrind --tool=callgrind --callgrind-out-file=/dev/null python /tmp/rep/ntloop.py $mode $var $1 2>&1 | sed -n 's/.*Collected : //p'; }
a=$(ir 1000); b=$(ir 11000)
echo "$tree $mode $var $(( (b - a) / 10000 ))"
