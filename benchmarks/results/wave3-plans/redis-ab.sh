#!/usr/bin/env bash
# Redis store, before (812b052) and after (c68a4bf): RedisAB (the harness of c68a4bf, without its near
# cache variants, compiled once against each jar: /tmp/abh/{before,after}) run from each jar alternately
# against one redis-server; each run brackets GCRA and token bucket with raw EVALSHA (B A1 B A2 B).
set -u
OUT=${OUT:-benchmarks/results/wave3-plans}
REPS=${REPS:-3}; WARM=${WARM:-4}; CASE_S=${CASE_S:-2}; ROUNDS=${ROUNDS:-4}
PORT=26679
while (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; do PORT=$((PORT+1)); done
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no --logfile /dev/null &
REDIS_PID=$!
trap 'kill $REDIS_PID 2>/dev/null; wait $REDIS_PID 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
echo "redis port $PORT; $(redis-server --version | cut -d' ' -f1-3); WARM=$WARM CASE_S=$CASE_S ROUNDS=$ROUNDS REPS=$REPS" | tee -a "$OUT/redis-load.txt"
for rep in $(seq 1 "$REPS"); do
  for callers in 16 64; do
    for side in before after; do
      echo "$(date -u +%H:%M:%S) rep=$rep callers=$callers side=$side load=$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/redis-load.txt"
      java -Xms512m -Xmx1g -cp "/tmp/abh/$side:/tmp/bench-$side.jar" dev.throttle.bench.RedisAB "$PORT" "$OUT/redis-ab-$side.txt" \
        "$WARM" "$CASE_S" "$ROUNDS" api hot "$callers" evalsha throttle-gcra throttle-token-bucket > "$OUT/redis-ab-$side-$rep-$callers.log" 2>&1
      echo "$(date -u +%H:%M:%S) rc=$? load=$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/redis-load.txt"
      grep '^summary' "$OUT/redis-ab-$side-$rep-$callers.log" | sed "s/^/rep=$rep side=$side /" >> "$OUT/redis-summaries.txt"
    done
  done
done
