#!/usr/bin/env bash
# profmin.sh <runs> <n> <step> files... : min of runs, interleaved
runs=$1; n=$2; step=$3; shift 3
for f in "$@"; do : > /tmp/lua-bench/pm.$(basename $f); done
for r in $(seq 1 $runs); do for f in "$@"; do lua5.1 prof.lua $f $n $step | awk '{print $2}' >> /tmp/lua-bench/pm.$(basename $f); done; done
for f in "$@"; do printf '%-36s min %6.3f  med %6.3f us\n' $f $(sort -n /tmp/lua-bench/pm.$(basename $f) | head -1) $(sort -n /tmp/lua-bench/pm.$(basename $f) | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'); done
