#!/usr/bin/env bash
# The reservation and concurrency-slot step of benchmarks/README.md: a reservation (a call that may wait
# for its turn) beside the plain decision of the same policy, in the memory store (JMH forks, ReserveAB, and
# the calling thread's CPU time, ReserveCpu) and in the Redis store (RedisAB), and on Redis a concurrency slot taken and released beside one GCRA decision,
# interleaved round by round in the same run, with the round trips of each call counted. Writes
# benchmarks/results/reserve.txt, replacing only that file (alone, it also regenerates summary.md: the
# other tables from the files results/ holds). run.sh calls it as one of its steps; it runs alone too:
#
#   bash benchmarks/reserve.sh            the full step: about 12 minutes on 2 cores, build excluded
#   QUICK=1 bash benchmarks/reserve.sh    tiny settings: checks the step works, figures meaningless
#
# Redis: its own redis-server on a free loopback port, stopped at the end (REDIS_PORT=<port>: use a
# running one on 127.0.0.1, as run.sh does; the step empties it with FLUSHALL).
#
# Alone (not from run.sh), a full run builds benchmarks/target/benchmarks.jar (SKIP_BUILD=1: use the
# jar there), holds /tmp/bench.lock while it measures and waits (at most LOAD_WAIT seconds, 600 unless set)
# for a 1-minute load average below 1.0, as run.sh does. The ratios come from interleaved rounds, so a
# busy machine moves them much less than the figures; every line records the load average.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
BENCH="$ROOT/benchmarks"
RESULTS="$BENCH/results"
LOGS="$BENCH/target/run-logs"
JAR="$BENCH/target/benchmarks.jar"
LOCK=/tmp/bench.lock
QUICK=${QUICK:-0}
LOAD_WAIT=${LOAD_WAIT:-600}
FROM_RUN=${FROM_RUN:-0}        # set by run.sh: it built the jar, holds the lock and waited for the load
STARTED=$(date +%s)

if [[ "$QUICK" == 1 ]]; then
  ROUNDS=2
  JMH=(1 200ms 1 300ms)        # warm-up iterations and time, measured iterations and time, per fork
  CPU_BLOCKS=(0.5 4 20000)     # ReserveCpu: warm-up seconds, blocks of each call, calls per block
  REDIS_TIMES=(1 0.3 2)        # JVM warm-up per variant, each case (seconds), rounds
else
  ROUNDS=5
  JMH=(2 1s 3 1s)
  CPU_BLOCKS=(5 30 100000)
  # many short rounds rather than a few long ones: on a shared machine the load moves within seconds,
  # and a case bracketed by its baseline cases a second apart meets the same load as they do
  REDIS_TIMES=(3 1 15)
fi
# RESERVE_CALLERS (space-separated) narrows the Redis callers, for trying it
read -r -a CALLERS <<<"${RESERVE_CALLERS:-1 16}"

log() { printf '\n== %s  [%ss]\n' "$*" "$(( $(date +%s) - STARTED ))"; }
mkdir -p "$RESULTS" "$LOGS"

if [[ "$FROM_RUN" != 1 && "${SKIP_BUILD:-0}" != 1 ]]; then
  log "build: benchmarks jar"
  ./mvnw -B -ntp -q -Pbench -pl benchmarks -am -DskipTests package
fi
test -f "$JAR" || { echo "no $JAR: build it with ./mvnw -Pbench -pl benchmarks -am -DskipTests package" >&2; exit 1; }

REDIS_PID=""; HOLD_LOCK=0
cleanup() {
  if [[ -n "$REDIS_PID" ]]; then kill "$REDIS_PID" 2>/dev/null || true; wait "$REDIS_PID" 2>/dev/null || true; fi
  if [[ "$HOLD_LOCK" == 1 ]]; then rm -f "$LOCK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ -z "${REDIS_PORT:-}" ]]; then
  command -v redis-server >/dev/null || { echo "no redis-server: apt-get install redis-server (or set REDIS_PORT)" >&2; exit 1; }
  free_port() {
    local port
    for port in $(seq "$1" "$(( $1 + 200 ))"); do
      if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return; fi
    done
    echo "no free port from $1" >&2; return 1
  }
  REDIS_PORT=$(free_port 26579)
  log "redis-server on 127.0.0.1:$REDIS_PORT"
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
    --logfile "$LOGS/redis-reserve.log" &
  REDIS_PID=$!
  for _ in $(seq 1 50); do redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
  redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null
fi

if [[ "$QUICK" != 1 && "$FROM_RUN" != 1 ]]; then
  for _ in $(seq 1 120); do [[ -e "$LOCK" ]] || break; sleep 5; done   # someone else measuring: wait <= 10 min
  touch "$LOCK"; HOLD_LOCK=1
  log "waiting for the 1-minute load average to fall below 1.0 (at most ${LOAD_WAIT}s)"
  for _ in $(seq 1 $(( LOAD_WAIT / 5 ))); do
    awk '{exit !($1 < 1.0)}' /proc/loadavg && break
    sleep 5
  done
fi

OUT="$RESULTS/reserve.txt"
{
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "# command: $( [[ "$QUICK" == 1 ]] && echo 'QUICK=1 ')bash benchmarks/reserve.sh$( [[ "$FROM_RUN" == 1 ]] && echo ' (from run.sh)')"
  echo "# commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- throttle-core throttle-spring-boot-starter 2>/dev/null || echo ' + uncommitted changes in core/starter')"
  echo "# nproc: $(nproc); java: $(java -version 2>&1 | head -1); redis-server: $(redis-server --version | awk '{print $3}')"
  echo "# memory rounds: $ROUNDS; jmh per fork (warm-up iterations, time, iterations, time): ${JMH[*]}, 1 thread, -prof gc;" \
    "cpu (warm-up seconds, blocks, calls per block): ${CPU_BLOCKS[*]};" \
    "redis (JVM warm-up per variant and each case in seconds, rounds): ${REDIS_TIMES[*]}, callers: ${CALLERS[*]}"
  echo "# load average before (1/5/15 min): $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$OUT"

# ------------------------------------------------------------------ memory (JMH forks, interleaved)
log "memory: reservation vs plain decision (ReserveAB, $ROUNDS rounds)"
java -cp "$JAR" dev.throttle.bench.ReserveAB "$OUT" "$ROUNDS" "${JMH[@]}" 1 \
  gcra:now,token-bucket:now,gcra:later | grep '^summary' | cut -c1-240
log "memory: the same by the calling thread's CPU time (ReserveCpu, ${CPU_BLOCKS[1]} blocks of each call)"
for name in gcra:now token-bucket:now gcra:later; do
  java -Xms1g -Xmx1g -XX:+UseG1GC -cp "$JAR" dev.throttle.bench.ReserveCpu "$OUT" "${CPU_BLOCKS[@]}" "$name" | cut -c1-240
done

# ------------------------------------------------------------------ redis (RedisAB, interleaved)
# each line: the baseline (the plain decision) first, the variants it brackets after it
AB_RUNS=(
  "high throttle-gcra throttle-reserve-gcra throttle-take-release"
  "high throttle-token-bucket throttle-reserve-token-bucket"
  "api throttle-gcra throttle-reserve-later-gcra"
)
for callers in "${CALLERS[@]}"; do
  for spec in "${AB_RUNS[@]}"; do
    read -r -a ab <<<"$spec"
    log "redis, $callers caller(s), regime ${ab[0]}: ${ab[*]:1}"
    java -Xms512m -Xmx1g -cp "$JAR" dev.throttle.bench.RedisAB "$REDIS_PORT" "$OUT" "${REDIS_TIMES[0]}" \
      "${REDIS_TIMES[1]}" "${REDIS_TIMES[2]}" "${ab[0]}" hot "$callers" "${ab[@]:1}" | grep -v '^round' | cut -c1-240
  done
done

{
  echo "# load average after (1/5/15 min): $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# elapsed: $(( $(date +%s) - STARTED )) s"
} >> "$OUT"
log "wrote $OUT"
if [[ "$FROM_RUN" != 1 ]]; then
  # summary.md again from what results/ holds: the other steps' tables as their run left them, this step's anew
  java -cp "$JAR" dev.throttle.bench.Report "$RESULTS" > /dev/null
  echo "wrote $RESULTS/summary.md"
fi
