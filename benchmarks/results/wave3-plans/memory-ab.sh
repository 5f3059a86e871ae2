#!/usr/bin/env bash
# Memory store, before (812b052) and after (c68a4bf) alternated: B A B A B A, identical JMH options.
set -u
OUT=${OUT:-benchmarks/results/wave3-plans}
OPTS=(-f 1 -wi 2 -w 1s -i 3 -r 2s -t 2 -p limit=api -p impl=throttle-token-bucket,throttle-gcra,throttle-fixed-window,bucket4j -p keys=hot,zipf -prof gc)
for pair in ${PAIRS:-1 2 3}; do
  for side in before after; do
    echo "$(date -u +%H:%M:%S) pair=$pair side=$side load=$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/memory-load.txt"
    java -jar /tmp/bench-$side.jar MemoryBenchmark "${OPTS[@]}" -rf csv -rff "$OUT/memory-$side-$pair.csv" > "$OUT/memory-$side-$pair.log" 2>&1
    echo "$(date -u +%H:%M:%S) pair=$pair side=$side done rc=$? load=$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/memory-load.txt"
  done
done
