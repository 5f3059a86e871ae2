#!/usr/bin/env bash
# Step 3's client-side profile: JFR (settings=profile) of a client JVM running only the store (GCRA, hot
# key, 64 callers, RedisAB with the store as its own baseline: 3 s warm-up each, 2 cases of 5 s), before
# then after, against one redis-server; summarized with JfrTop (the after jar's).
set -u
OUT=${OUT:-benchmarks/results/wave3-plans}
PORT=26879
while (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; do PORT=$((PORT+1)); done
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no --logfile /dev/null &
REDIS_PID=$!
trap 'kill $REDIS_PID 2>/dev/null; wait $REDIS_PID 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
for side in before after; do
  java -Xms512m -Xmx1g -XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints \
    -XX:StartFlightRecording=filename=/tmp/wave3-plans-$side.jfr,settings=profile \
    -cp "/tmp/abh/$side:/tmp/bench-$side.jar" dev.throttle.bench.RedisAB "$PORT" "$OUT/redis-client-profile-cases.txt" 3 5 1 api hot 64 \
    throttle-gcra throttle-gcra > /dev/null 2>&1
  { echo "== $side $(date -u +%H:%M:%S) load=$(cut -d' ' -f1-3 /proc/loadavg)"; tail -1 "$OUT/redis-client-profile-cases.txt";
    java -cp /tmp/bench-after.jar dev.throttle.bench.JfrTop /tmp/wave3-plans-$side.jfr 40; } >> "$OUT/redis-client-profile.txt" 2>&1
done
