#!/usr/bin/env bash
# The batching step of benchmarks/README.md: the Redis store's allowed decisions with batching on (the
# default: acquires of one policy that wait at the same moment leave in one script call) and off, beside
# a bare EVALSHA of `return 1` through Lettuce, interleaved round by round in the same run (RedisAB:
# B A1 B A2 B per round), at 1, 16 and 64 callers, on a hot key and on Zipf keys. Each round line has
# decisions/s, p50/p99, the client's and Redis's CPU per decision (INFO cpu) and Redis's time inside
# scripts per decision (INFO commandstats); the trips lines count round trips and scripts per decision.
# Writes benchmarks/results/batching.txt (replaced). run.sh calls it as one of its steps; alone:
#
#   bash benchmarks/batching.sh           about 8 minutes on 2 cores, build excluded
#   QUICK=1 bash benchmarks/batching.sh   tiny settings: checks the step works, figures meaningless
#
# Redis: its own redis-server on a free loopback port, stopped at the end (REDIS_PORT=<port>: use a
# running one on 127.0.0.1, as run.sh does; the step empties it with FLUSHALL). Alone, it builds
# benchmarks/target/benchmarks.jar first (SKIP_BUILD=1: use the jar there).
set -euo pipefail

cd "$(dirname "$0")/.."
OUT="benchmarks/results/batching.txt"
source benchmarks/redis-ab.sh

REDIS_PID=""
trap '[[ -n "$REDIS_PID" ]] && kill "$REDIS_PID" 2>/dev/null; true' EXIT
if [[ -z "${REDIS_PORT:-}" ]]; then
  command -v redis-server >/dev/null || { echo "no redis-server: apt-get install redis-server (or set REDIS_PORT)" >&2; exit 1; }
  for REDIS_PORT in $(seq 27379 27579); do
    (exec 3<>"/dev/tcp/127.0.0.1/$REDIS_PORT") 2>/dev/null || break
  done
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
    --logfile /dev/null &
  REDIS_PID=$!
  for _ in $(seq 1 50); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
fi

{
  echo "# batching step: $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)," \
    "QUICK=${QUICK:-0}, times ${TIMES[*]}, load average before $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# nproc: $(nproc); java: $(java -version 2>&1 | head -1); redis-server: $(redis-server --version | awk '{print $3}')"
} > "$OUT"
for keys in hot zipf; do
  for callers in 1 16 64; do
    log "redis, $keys keys, $callers caller(s): evalsha, throttle-gcra (batching on), unbatched-gcra"
    java -Xms512m -Xmx1g -cp "$JAR" dev.throttle.bench.RedisAB "$REDIS_PORT" "$OUT" "${TIMES[@]}" \
      high "$keys" "$callers" evalsha throttle-gcra unbatched-gcra | grep '^summary' | cut -c1-200
  done
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg); elapsed $(( $(date +%s) - STARTED )) s" >> "$OUT"
log "wrote $OUT"
