#!/usr/bin/env bash
# Issue 14's Redis measurements (benchmarks/README.md, "Redis: interleaved A/B, the near cache"), raw
# outputs in benchmarks/results/wave3/. Needs redis-server and redis-cli, and the jar:
#   ./mvnw -Pbench -pl benchmarks -am -DskipTests package
#
#   bash benchmarks/wave3.sh ab <run-name>     the hot Redis rows of "After the renovation", interleaved
#   bash benchmarks/wave3.sh abuse <run-name>  abuser traffic: near cache against raw EVALSHA, MONITOR counts
#   bash benchmarks/wave3.sh mixed <run-name>  two instances, one Redis, 90% refused keys, with and without
#
# ROUNDS, CASE_S and MIXED_S override the defaults (8 rounds, 2 s per case, 60 s mixed run).
set -euo pipefail
cd "$(dirname "$0")/.."
JAR=benchmarks/target/benchmarks.jar
OUT=benchmarks/results/wave3
ROUNDS=${ROUNDS:-8}
CASE_S=${CASE_S:-2}
MIXED_S=${MIXED_S:-60}
what=$1; name=$2
mkdir -p "$OUT"
free_port() {
  local port
  for port in $(seq "$1" "$(( $1 + 200 ))"); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return; fi
  done
  return 1
}
PORT=$(free_port 26479)
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no --logfile /dev/null &
REDIS_PID=$!
trap 'kill $REDIS_PID 2>/dev/null; wait $REDIS_PID 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
RC=(redis-cli -p "$PORT")
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  run: $what $name  commit: $(git rev-parse --short HEAD)"
  echo "nproc: $(nproc); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); $(java -version 2>&1 | head -1); $(redis-server --version | cut -d' ' -f1-3)"
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee -a "$OUT/machine-$name.txt"
case "$what" in
  ab)
    for callers in 16 64; do
      java -Xms512m -Xmx1g -cp "$JAR" dev.throttle.bench.RedisAB "$PORT" "$OUT/ab-$name.txt" 5 "$CASE_S" "$ROUNDS" api hot \
        "$callers" evalsha throttle-gcra nearcache-gcra throttle-token-bucket throttle-fixed-window | grep '^summary'
    done ;;
  abuse)
    for keys in hot zipf10k; do
      for callers in 16 64; do
        "${RC[@]}" flushall >/dev/null
        java -Xms1g -Xmx1g -cp "$JAR" dev.throttle.bench.RedisAB "$PORT" "$OUT/abuse-$name.txt" 5 "$CASE_S" "$ROUNDS" abuse "$keys" \
          "$callers" evalsha nearcache-gcra | grep '^summary'
      done
    done ;;
  mixed)
    for nc in off on; do
      "${RC[@]}" flushall >/dev/null
      for instance in a b; do
        java -Xms256m -Xmx512m -cp "$JAR" dev.throttle.bench.RedisMixed "$PORT" "$OUT/mixed-$name.txt" "$instance" "$nc" 8 4000 15 "$MIXED_S" &
      done
      sleep 17   # JVM start, abusers driven over their limit, then the 15 s warm-up
      "${RC[@]}" config resetstat >/dev/null
      start=$(date +%s.%N)
      sleep "$MIXED_S"
      stats=$("${RC[@]}" info commandstats | tr -d '\r')
      end=$(date +%s.%N)
      wait %2 %3 2>/dev/null || wait
      secs=$(echo "$end - $start" | bc)
      top=$(echo "$stats" | awk -F'[:=,]' '/^cmdstat_(evalsha|eval|publish|del|ping|script)/{s+=$3} END{print s+0}')
      all=$(echo "$stats" | awk -F'[:=,]' '/^cmdstat_/ && !/cmdstat_(info|config)/{s+=$3} END{print s+0}')
      echo "summary near_cache=$nc instances=2 seconds=$secs top_level_commands=$top per_second=$(echo "$top / $secs" | bc) all_commands_incl_script_inner=$all per_second_all=$(echo "$all / $secs" | bc) stats=$(echo "$stats" | grep '^cmdstat' | cut -d, -f1 | tr '\n' ' ')" \
        | tee -a "$OUT/mixed-$name.txt"
    done ;;
esac
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine-$name.txt"
