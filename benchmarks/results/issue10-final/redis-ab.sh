#!/usr/bin/env bash
# Issue 10: the Redis hot rows against the code before the renovation. Before is f00c3ab (run C's
# code), after is the jar named by AFTER (main de9cecb, then the perf branch). The harness is main's
# RedisAB/RedisLoad/Workload/JfrTop with the near-cache and evalsha-gcra-bare variants taken out (neither
# exists at f00c3ab), compiled once against each jar into $W/<side>/; the runs alternate before/after
# against one redis-server; each run brackets GCRA and token bucket with raw EVALSHA (B A1 B A2 B).
set -u
OUT=${OUT:-benchmarks/results/issue10-final}
TAG=${TAG:-main}            # names this comparison's files: redis-ab-<side>-<TAG>-<rep>-<callers>.log
AFTER=${AFTER:-main}        # $W/$AFTER (classes) and $W/bench-$AFTER.jar
REPS=${REPS:-3}; WARM=${WARM:-4}; CASE_S=${CASE_S:-2}; ROUNDS=${ROUNDS:-4}
W=${W:-/tmp/i10}
PORT=${PORT:-6431}
while (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; do PORT=$((PORT+1)); done
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no --logfile /dev/null &
REDIS_PID=$!
trap 'kill $REDIS_PID 2>/dev/null; wait $REDIS_PID 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
echo "$TAG: redis port $PORT; $(redis-server --version | cut -d' ' -f1-3); WARM=$WARM CASE_S=$CASE_S ROUNDS=$ROUNDS REPS=$REPS" | tee -a "$OUT/redis-load-$TAG.txt"
for rep in $(seq 1 "$REPS"); do
  for callers in 16 64; do
    for side in before "$AFTER"; do
      echo "$(date -u +%H:%M:%S) rep=$rep callers=$callers side=$side load=$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/redis-load-$TAG.txt"
      java -Xms512m -Xmx1g -cp "$W/$side:$W/bench-$side.jar" dev.throttle.bench.RedisAB "$PORT" "$OUT/redis-ab-$side-$TAG.txt" \
        "$WARM" "$CASE_S" "$ROUNDS" api hot "$callers" evalsha throttle-gcra throttle-token-bucket > "$OUT/redis-ab-$side-$TAG-$rep-$callers.log" 2>&1
      echo "$(date -u +%H:%M:%S) rc=$? load=$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/redis-load-$TAG.txt"
      grep '^summary' "$OUT/redis-ab-$side-$TAG-$rep-$callers.log" | sed "s/^/rep=$rep side=$side /" >> "$OUT/redis-summaries-$TAG.txt"
    done
  done
done
