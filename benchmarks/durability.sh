#!/usr/bin/env bash
# The durability step of benchmarks/README.md: what `durability: replicated` costs. A master with one
# replica (two redis-server processes on free loopback ports, stopped at the end); the Redis store's
# GCRA decisions with the policy's writes waiting for the replica (`replicated-gcra`: the script, then
# WAIT 1, on the store's connection for such writes) beside the same store without it and without
# batching (`unbatched-gcra`: batching is off for a replicated policy, so this is the like-for-like
# peer), and a bare EVALSHA of `return 1`, interleaved round by round (RedisAB: B A1 B A2 B), at 1 and
# 16 callers on Zipf keys. Writes benchmarks/results/durability.txt (replaced). run.sh calls it; alone:
#
#   bash benchmarks/durability.sh           about 2 minutes on 2 cores, build excluded
#   QUICK=1 bash benchmarks/durability.sh   tiny settings: checks the step works, figures meaningless
#
# Alone, it builds benchmarks/target/benchmarks.jar first (SKIP_BUILD=1: use the jar there).
set -euo pipefail

cd "$(dirname "$0")/.."
OUT="benchmarks/results/durability.txt"
source benchmarks/redis-ab.sh
command -v redis-server >/dev/null || { echo "no redis-server: apt-get install redis-server" >&2; exit 1; }

free_port() {
  for port in $(seq "$1" $(( $1 + 200 ))); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || { echo "$port"; return; }
  done
}
PIDS=()
trap 'for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done; true' EXIT
MASTER_PORT=$(free_port 28379)
redis-server --port "$MASTER_PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no --logfile /dev/null &
PIDS+=($!)
for _ in $(seq 1 50); do redis-cli -p "$MASTER_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
REPLICA_PORT=$(free_port $(( MASTER_PORT + 1 )))
redis-server --port "$REPLICA_PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no --logfile /dev/null \
  --replicaof 127.0.0.1 "$MASTER_PORT" &
PIDS+=($!)
for _ in $(seq 1 100); do
  redis-cli -p "$REPLICA_PORT" info replication 2>/dev/null | grep -q 'master_link_status:up' && break
  sleep 0.1
done

{
  echo "# durability step: $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)," \
    "QUICK=${QUICK:-0}, times ${TIMES[*]}, load average before $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# nproc: $(nproc); java: $(java -version 2>&1 | head -1); redis-server: $(redis-server --version | awk '{print $3}');" \
    "master :$MASTER_PORT with one replica :$REPLICA_PORT"
} > "$OUT"
for callers in 1 16; do
  log "redis with a replica, zipf keys, $callers caller(s): evalsha, unbatched-gcra, replicated-gcra"
  java -Xms512m -Xmx1g -cp "$JAR" dev.throttle.bench.RedisAB "$MASTER_PORT" "$OUT" "${TIMES[@]}" \
    high zipf "$callers" evalsha unbatched-gcra replicated-gcra | grep '^summary' | cut -c1-200
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg); elapsed $(( $(date +%s) - STARTED )) s" >> "$OUT"
log "wrote $OUT"
