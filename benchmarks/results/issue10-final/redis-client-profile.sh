#!/usr/bin/env bash
# Step 2's client-side profile: JFR (profile settings with Java sampled every 1 ms, profile-1ms.jfc)
# of a client JVM running only the store (hot key, 16 callers, regime api; RedisAB with the store as
# its own baseline: 4 s warm-up, 3 cases of 4 s), for each side in SIDES, against one redis-server;
# summarized with JfrTop (caller threads only, then all threads).
set -u
OUT=${OUT:-benchmarks/results/issue10-final}
W=${W:-/tmp/i10}
SIDES=${SIDES:-before main}
VARIANT=${VARIANT:-throttle-gcra}
TAG=${TAG:-main}
PORT=${PORT:-6441}
while (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; do PORT=$((PORT+1)); done
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no --logfile /dev/null &
REDIS_PID=$!
trap 'kill $REDIS_PID 2>/dev/null; wait $REDIS_PID 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
for side in $SIDES; do
  java -Xms512m -Xmx1g -XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints \
    -XX:StartFlightRecording=filename=$W/profile-$side-$VARIANT.jfr,settings=$W/profile-1ms.jfc \
    -cp "$W/$side:$W/bench-$side.jar" dev.throttle.bench.RedisAB "$PORT" "$OUT/redis-client-profile-cases-$TAG.txt" 4 4 1 api hot 16 \
    "$VARIANT" "$VARIANT" > /dev/null 2>&1
  { echo "== $side $VARIANT $(date -u +%H:%M:%S) load=$(cut -d' ' -f1-3 /proc/loadavg)"; grep '^summary' "$OUT/redis-client-profile-cases-$TAG.txt" | tail -1;
    echo "-- caller threads"; java -cp "$W/main:$W/bench-main.jar" dev.throttle.bench.JfrTop "$W/profile-$side-$VARIANT.jfr" 45 caller-;
    echo "-- all threads"; java -cp "$W/main:$W/bench-main.jar" dev.throttle.bench.JfrTop "$W/profile-$side-$VARIANT.jfr" 30; } >> "$OUT/redis-client-profile-$TAG.txt" 2>&1
done
