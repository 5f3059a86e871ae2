#!/usr/bin/env bash
# Memory store, before (de9cecb: before the core split) and after (3a66b19: CellLimiter, DecisionBits,
# StampedTransition, PackedAlgorithm) alternated: B A B A ..., identical JMH options, one JVM fork each.
# Second run: PREFIX=array IMPLS=throttle-lockout,throttle-sliding-log,bucket4j PAIRS="1 2 3 4" (the array limiter's rows).
set -u
OUT=${OUT:-benchmarks/results/issue10-memory}
OPTS=(-f 1 -wi 2 -w 1s -i 3 -r 2s -t 2 -p limit=api
  -p impl=${IMPLS:-throttle-token-bucket,throttle-gcra,throttle-fixed-window,throttle-lockout,throttle-sliding-log,bucket4j}
  -p keys=hot,zipf -prof gc)
for pair in ${PAIRS:-1 2 3 4}; do
  for side in before after; do
    echo "$(date -u +%H:%M:%S) pair=$pair side=$side load=$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/memory-load.txt"
    java -jar /tmp/w4/bench-$side.jar MemoryBenchmark "${OPTS[@]}" -rf csv -rff "$OUT/${PREFIX:-memory}-$side-$pair.csv" > "$OUT/${PREFIX:-memory}-$side-$pair.log" 2>&1
    echo "$(date -u +%H:%M:%S) pair=$pair side=$side done rc=$? load=$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/memory-load.txt"
  done
done
