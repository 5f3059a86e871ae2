#!/usr/bin/env bash
# Step 3's brief profile: the server's own time per GCRA script call (INFO commandstats, usec_per_call of
# EVALSHA, only the store's script running: RedisAB with the store as its own baseline), before and after
# alternated, hot key, 64 callers, against one redis-server.
set -u
OUT=${OUT:-benchmarks/results/wave3-plans}
VARIANT=${VARIANT:-throttle-gcra}; CALLERS=${CALLERS:-64}
PORT=26779
while (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; do PORT=$((PORT+1)); done
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no --logfile /dev/null &
REDIS_PID=$!
trap 'kill $REDIS_PID 2>/dev/null; wait $REDIS_PID 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
for rep in 1 2 3; do
  for side in before after; do
    redis-cli -p "$PORT" config resetstat > /dev/null
    java -Xms512m -Xmx1g -cp "/tmp/abh/$side:/tmp/bench-$side.jar" dev.throttle.bench.RedisAB "$PORT" /dev/null 3 2 1 api hot "$CALLERS" \
      "$VARIANT" "$VARIANT" > /dev/null 2>&1
    echo "$(date -u +%H:%M:%S) rep=$rep side=$side variant=$VARIANT callers=$CALLERS load=$(cut -d' ' -f1-3 /proc/loadavg) $(redis-cli -p "$PORT" info commandstats | tr -d '\r' | grep -E '^cmdstat_(evalsha|time|get|set|hget|hset|hmget):' | tr '\n' ' ')" \
      | tee -a "$OUT/redis-script-cost.txt"
  done
done
