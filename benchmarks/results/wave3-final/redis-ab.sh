#!/usr/bin/env bash
# Wave 3, final: the Redis rows of issue 13 again, before (812b052) and after (0231e9f, the slimmed scripts).
# The harness is wave3-plans' (0231e9f's RedisAB/RedisLoad/Workload without the near-cache variant,
# harness-RedisLoad.diff there), compiled once against each jar (/tmp/w3f/{before,after}); the runs alternate
# before/after against one redis-server; each run brackets GCRA and token bucket with raw EVALSHA (B A1 B A2 B).
set -u
OUT=${OUT:-benchmarks/results/wave3-final}
REPS=${REPS:-3}; WARM=${WARM:-4}; CASE_S=${CASE_S:-2}; ROUNDS=${ROUNDS:-4}
W=${W:-/tmp/w3f}
PORT=26779
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
      java -Xms512m -Xmx1g -cp "$W/$side:$W/bench-$side.jar" dev.throttle.bench.RedisAB "$PORT" "$OUT/redis-ab-$side.txt" \
        "$WARM" "$CASE_S" "$ROUNDS" api hot "$callers" evalsha throttle-gcra throttle-token-bucket > "$OUT/redis-ab-$side-$rep-$callers.log" 2>&1
      echo "$(date -u +%H:%M:%S) rc=$? load=$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/redis-load.txt"
      grep '^summary' "$OUT/redis-ab-$side-$rep-$callers.log" | sed "s/^/rep=$rep side=$side /" >> "$OUT/redis-summaries.txt"
    done
  done
done
