#!/bin/bash
tree=$1; v=$2
. /work/venv/bin/activate
ir() { PYTHONPATH=/work/$tree/src valgrind --tool=callgrind --callgrind-out-file=/dev/null python -W ignore /tmp/rep/tloop.py $v $1 2>&1 | sed -n 's/.*Collected : //p'; }
a=$(ir 500); b=$(ir 5500)
echo "$tree $v $(( (b - a) / 5000 ))"
