#!/usr/bin/env bash
# Runs every benchmark of benchmarks/README.md and writes the raw results and summary.md under
# benchmarks/results/. Needs a JDK 17; installs redis-server, redis-tools and wrk from Debian's
# packages when they are missing (as root), starts its own redis-server and sample app on free
# loopback ports and stops them at the end; its PostgreSQL step (benchmarks/jdbc.sh, which also runs
# alone) does the same with Debian's postgresql; its reservation step (benchmarks/reserve.sh, which also
# runs alone) and its batching step (benchmarks/batching.sh, likewise, about 8 minutes) use the run's
# redis-server; its durability step (benchmarks/durability.sh, about 2 minutes) starts a master and a
# replica of its own. About 30 minutes on 2 quiet cores before the reservation step
# (about 12 more); QUICK=1 took 1,797 s with the build on 2 cores at a load average of 12-25 before the
# PostgreSQL step was added (builds dominate there: ~9 minutes).
#
#   bash benchmarks/run.sh            the full, measured run
#   QUICK=1 bash benchmarks/run.sh    a smoke test of every step with tiny settings (figures meaningless)
#
# While it measures it holds /tmp/bench.lock (other builds on a shared machine wait while it exists)
# and it starts measuring only once the 1-minute load average is below 1.0 (waiting at most LOAD_WAIT
# seconds, 600 unless set). It also runs the measuring tests of benchmarks/src/test (-Pmeasure), which
# `./mvnw verify` skips: the memory store's bytes per key and the near cache's invalidation window.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
BENCH="$ROOT/benchmarks"
RESULTS="$BENCH/results"
LOGS="$BENCH/target/run-logs"
JAR="$BENCH/target/benchmarks.jar"
LOCK=/tmp/bench.lock
QUICK=${QUICK:-0}
LOAD_WAIT=${LOAD_WAIT:-600}   # seconds to wait for a quiet machine before measuring (0: start at once)
STARTED=$(date +%s)

if [[ "$QUICK" == 1 ]]; then
  JMH_TIMES=(-f 1 -wi 1 -w 200ms -i 1 -r 300ms)
  JMH_TIMES_T2=("${JMH_TIMES[@]}")
  REDIS_TIMES=(1 0.2 0.5)       # JVM warm-up, per-case warm-up, measurement (seconds)
  REDIS_BENCH_N=(2000 10000)    # requests at 1 client, at 16 and 64 clients
  HTTP_WARM=1; HTTP_WARM_STEP=1; HTTP_WARM_REQUESTS=0; HTTP_WARM_MAX=1; HTTP_MEASURE=2; HTTP_ROUNDS=1
  RETAINED_KEYS=100000; RETAINED_FULL_KEYS=10000
else
  JMH_TIMES=(-f 1 -wi 2 -w 1s -i 3 -r 1s)
  JMH_TIMES_T2=(-f 1 -wi 2 -w 1s -i 3 -r 2s)   # the targets are at 2 threads: longer iterations, less noise
  REDIS_TIMES=(3 1 3)
  REDIS_BENCH_N=(20000 200000)
  HTTP_WARM=15; HTTP_WARM_STEP=5; HTTP_WARM_REQUESTS=300000; HTTP_WARM_MAX=120
  HTTP_MEASURE=10; HTTP_ROUNDS=5   # five interleaved pairs
  RETAINED_KEYS=1000000; RETAINED_FULL_KEYS=100000
fi

log() { printf '\n== %s  [%ss]\n' "$*" "$(( $(date +%s) - STARTED ))"; }

# ------------------------------------------------------------------ tools
need=()
command -v redis-server >/dev/null || need+=(redis-server)
command -v redis-benchmark >/dev/null || need+=(redis-tools)
command -v redis-cli >/dev/null || need+=(redis-tools)
command -v wrk >/dev/null || need+=(wrk)
command -v curl >/dev/null || need+=(curl)
if (( ${#need[@]} )); then
  log "installing ${need[*]} (Debian packages)"
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "cannot install ${need[*]}: not root or no apt-get" >&2
    exit 1
  fi
fi

# ------------------------------------------------------------------ build
log "build: benchmarks jar and sample app"
./mvnw -B -ntp -q -Pbench -pl benchmarks,sample-app -am -DskipTests package
# the sample app's jar carries the project's version, which the build says (never hard-coded here)
VERSION=$(./mvnw -B -ntp -q help:evaluate -Dexpression=project.version -DforceStdout -pl sample-app | tail -1)
APP_JAR="$ROOT/sample-app/target/throttle-sample-app-$VERSION.jar"
test -f "$JAR" || { echo "no $JAR after the build" >&2; exit 1; }
test -f "$APP_JAR" || { echo "no $APP_JAR after the build (version '$VERSION')" >&2; exit 1; }

# results/ holds one run, this one: whatever an earlier run (or experiment) left there goes
mkdir -p "$RESULTS" "$LOGS"
find "$RESULTS" -mindepth 1 -delete

# ------------------------------------------------------------------ lock, load, cleanup
REDIS_PID=""; APP_PID=""; HOLD_LOCK=0
cleanup() {
  if [[ -n "$APP_PID" ]]; then kill "$APP_PID" 2>/dev/null || true; wait "$APP_PID" 2>/dev/null || true; fi
  if [[ -n "$REDIS_PID" ]]; then kill "$REDIS_PID" 2>/dev/null || true; wait "$REDIS_PID" 2>/dev/null || true; fi
  if [[ "$HOLD_LOCK" == 1 ]]; then rm -f "$LOCK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ "$QUICK" != 1 ]]; then
  for _ in $(seq 1 120); do [[ -e "$LOCK" ]] || break; sleep 5; done   # someone else measuring: wait <= 10 min
  touch "$LOCK"; HOLD_LOCK=1
  log "waiting for the 1-minute load average to fall below 1.0 (at most ${LOAD_WAIT}s)"
  for _ in $(seq 1 $(( LOAD_WAIT / 5 ))); do
    awk '{exit !($1 < 1.0)}' /proc/loadavg && break
    sleep 5
  done
fi
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "command: $( [[ "$QUICK" == 1 ]] && echo 'QUICK=1 ')bash benchmarks/run.sh"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- throttle-core throttle-spring-boot-starter 2>/dev/null || echo ' + uncommitted changes in core/starter')"
  echo "nproc: $(nproc)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  echo "memory: $(free -g | awk '/^Mem:/{print $2}') GiB"
  echo "java: $(java -version 2>&1 | head -1); $(java -version 2>&1 | sed -n 3p)"
  echo "redis-server: $(redis-server --version)"
  echo "wrk: $(wrk -v 2>&1 | head -1)"
  echo "jmh: ${JMH_TIMES[*]} -prof gc (1 thread, escape analysis); ${JMH_TIMES_T2[*]} -prof gc (2 threads)"
  echo "load average before (1/5/15 min): $LOAD_BEFORE"
} > "$RESULTS/machine.txt"
cat "$RESULTS/machine.txt"

# ------------------------------------------------------------------ memory store (JMH)
HIGH_IMPLS=throttle-token-bucket,throttle-gcra,throttle-fixed-window,bucket4j
for threads in 1 2; do
  times=("${JMH_TIMES[@]}"); [[ $threads == 2 ]] && times=("${JMH_TIMES_T2[@]}")
  log "memory, regime api, $threads thread(s)"
  java -jar "$JAR" MemoryBenchmark "${times[@]}" -t "$threads" -p limit=api -prof gc \
    -rf csv -rff "$RESULTS/memory-api-t$threads.csv" > "$LOGS/memory-api-t$threads.log" 2>&1
  log "memory, regime high, $threads thread(s)"
  java -jar "$JAR" MemoryBenchmark "${times[@]}" -t "$threads" -p limit=high -p impl=$HIGH_IMPLS -prof gc \
    -rf csv -rff "$RESULTS/memory-high-t$threads.csv" > "$LOGS/memory-high-t$threads.log" 2>&1
done

log "memory, escape analysis: callers that keep only allowed()"
java -jar "$JAR" EscapeBenchmark "${JMH_TIMES[@]}" -t 1 -prof gc -rf csv -rff "$RESULTS/memory-escape.csv" \
  > "$LOGS/memory-escape.log" 2>&1
java -Djol.magicFieldOffset=true -cp "$JAR" dev.throttle.bench.Layouts 2>/dev/null | grep -v '^#' > "$RESULTS/layouts.txt"

# ------------------------------------------------------------------ retained heap per idle key
log "retained heap per idle key"
for impl in caffeine-entry bucket4j throttle-token-bucket throttle-gcra throttle-fixed-window throttle-lockout throttle-sliding-log; do
  java -Xms3g -Xmx3g -XX:+UseG1GC -cp "$JAR" dev.throttle.bench.RetainedHeap "$impl" "$RETAINED_KEYS" >> "$RESULTS/retained.txt"
done
java -Xms3g -Xmx3g -XX:+UseG1GC -cp "$JAR" dev.throttle.bench.RetainedHeap throttle-sliding-log-full "$RETAINED_FULL_KEYS" \
  >> "$RESULTS/retained.txt"
cat "$RESULTS/retained.txt"

# ------------------------------------------------------------------ redis
free_port() {
  local port
  for port in $(seq "$1" "$(( $1 + 200 ))"); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return; fi
  done
  echo "no free port from $1" >&2; return 1
}
REDIS_PORT=$(free_port 26379)
log "redis-server on 127.0.0.1:$REDIS_PORT"
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
  --logfile "$LOGS/redis.log" &
REDIS_PID=$!
for _ in $(seq 1 50); do redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null

for regime in api high; do
  if [[ "$regime" == api ]]; then
    variants=(evalsha evalsha-gcra-bare evalsha-spring throttle-token-bucket throttle-gcra throttle-fixed-window throttle-lockout
              throttle-sliding-log bucket4j)
  else
    variants=(evalsha evalsha-gcra-bare throttle-token-bucket throttle-gcra throttle-fixed-window bucket4j)
  fi
  for variant in "${variants[@]}"; do
    log "redis, regime $regime, $variant"
    java -Xms512m -Xmx1g -cp "$JAR" dev.throttle.bench.RedisLoad "$REDIS_PORT" "$RESULTS/redis.txt" \
      "${REDIS_TIMES[@]}" "$variant" "$regime" hot,zipf 1,16,64 | cut -c1-220
  done
done

log "redis-benchmark: the server's ceiling"
RC=(redis-cli -h 127.0.0.1 -p "$REDIS_PORT")
"${RC[@]}" flushall >/dev/null
ONE=$("${RC[@]}" script load "return 1")
# the store's script for the api regime's GCRA policy (100 per second), built by the store's own code:
# the policy's numbers, prelude.lua (which defines now and reads the key), then gcra.lua
java -cp "$JAR" dev.throttle.spring.redis.StoreScript gcra api > "$LOGS/gcra-api.lua"
GCRA=$("${RC[@]}" script load "$(cat "$LOGS/gcra-api.lua")")
[[ "$GCRA" =~ ^[0-9a-f]{40}$ ]] || { echo "SCRIPT LOAD of the GCRA script failed: $GCRA" >&2; exit 1; }
# one call first: a script that fails (a global it lacks) must stop the run here, not be timed
check=$("${RC[@]}" evalsha "$GCRA" 1 'throttle:{bench:check}' a 1 '' 2>&1 | head -1)
[[ "$check" == 1 ]] || { echo "the GCRA script does not run: $check" >&2; exit 1; }
rb() { # clients requests label args...
  local clients=$1 n=$2 label=$3; shift 3
  redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -c "$clients" -n "$n" --csv "$@" 2>/dev/null \
    | grep -v '^"test"' | sed -E "s/^\"[^\"]*\"/$clients,\"$label\"/" >> "$RESULTS/redis-benchmark.csv"
}
rb 1 "${REDIS_BENCH_N[0]}" "PING" PING
for clients in 1 16 64; do
  n=${REDIS_BENCH_N[1]}; [[ $clients == 1 ]] && n=${REDIS_BENCH_N[0]}
  rb "$clients" "$n" "EVALSHA return 1" EVALSHA "$ONE" 1 'throttle:{bench:k}'
done
for clients in 1 64; do
  n=${REDIS_BENCH_N[1]}; [[ $clients == 1 ]] && n=${REDIS_BENCH_N[0]}
  rb "$clients" "$n" "EVALSHA gcra.lua api, hot key" EVALSHA "$GCRA" 1 'throttle:{bench:hot}' a 1 ''
  rb "$clients" "$n" "EVALSHA gcra.lua api, 100k random keys" -r 100000 EVALSHA "$GCRA" 1 'throttle:{bench:__rand_int__}' a 1 ''
done
cat "$RESULTS/redis-benchmark.csv"

log "measuring tests (-Pmeasure): bytes per key (JOL), near cache invalidation window (two Boot instances, this Redis)"
"${RC[@]}" flushall >/dev/null
MEASURE_TESTS=MemoryFootprintTests,NearCacheInvalidationLatencyTests
measure_status=0
REDIS_URL="redis://127.0.0.1:$REDIS_PORT" ./mvnw -B -ntp -Pmeasure -pl benchmarks -am verify -Dtest="$MEASURE_TESTS" \
  -Dsurefire.failIfNoSpecifiedTests=false -Dthrottle.skip-blockhound=true > "$LOGS/measure.log" 2>&1 || measure_status=$?
for f in memory-footprint.txt near-cache-invalidation.txt; do
  if [[ -f "$BENCH/target/$f" ]]; then cp "$BENCH/target/$f" "$RESULTS/$f"; fi
done
{
  for xml in "$BENCH"/target/surefire-reports/TEST-*.xml; do
    [[ -f "$xml" ]] || continue
    sed -n 's/^<testsuite .*name="\([^"]*\)" time="\([^"]*\)" tests="\([^"]*\)" errors="\([^"]*\)" skipped="\([^"]*\)" failures="\([^"]*\)".*/test=\1 seconds=\2 tests=\3 errors=\4 skipped=\5 failures=\6/p' "$xml"
  done
  echo "maven exit status: $measure_status (see $LOGS/measure.log)"
} > "$RESULTS/measure.txt"
cat "$RESULTS/measure.txt"

log "reservations and concurrency slots beside the plain decision, memory and this Redis (benchmarks/reserve.sh)"
# its own script, so that it also runs alone (then with its own redis-server)
FROM_RUN=1 QUICK="$QUICK" REDIS_PORT="$REDIS_PORT" bash "$BENCH/reserve.sh"
log "batching on and off beside a bare EVALSHA, 1/16/64 callers, hot and Zipf keys (benchmarks/batching.sh)"
FROM_RUN=1 QUICK="$QUICK" REDIS_PORT="$REDIS_PORT" bash "$BENCH/batching.sh"
log "durability: replicated (WAIT 1 after each write) beside the same store without it, master with one replica (benchmarks/durability.sh)"
FROM_RUN=1 QUICK="$QUICK" bash "$BENCH/durability.sh"
kill "$REDIS_PID"; wait "$REDIS_PID" 2>/dev/null || true; REDIS_PID=""

# ------------------------------------------------------------------ postgresql
log "postgresql: the jdbc store beside Bucket4j's PostgreSQL proxy managers (benchmarks/jdbc.sh)"
# its own script, so that it also runs alone; it starts and stops its own PostgreSQL
FROM_RUN=1 QUICK="$QUICK" bash "$BENCH/jdbc.sh"

# ------------------------------------------------------------------ http
log "http: sample app GET /api/hello with and without @Throttled"
HTTP_PORT=$(free_port 28080)
# a limit the load never reaches, so no call is refused: GCRA 8,000,000 per 8 s (a call every 1 us, a
# whole number of microseconds as the startup check requires; the limit's maximum is 8,388,607), a
# burst of 8,000,000 that a run of at most ~2 million requests per app start cannot use up
LIMIT_ARGS=(--throttle.policies.api.limit=8000000 --throttle.policies.api.period=8s)
for round in $(seq 1 "$HTTP_ROUNDS"); do
  for mode in unthrottled throttled; do
    args=(--server.port="$HTTP_PORT" --logging.level.root=WARN --spring.main.banner-mode=off "${LIMIT_ARGS[@]}")
    [[ "$mode" == unthrottled ]] && args+=(--throttle.enabled=false)
    java -Xms512m -Xmx512m -XX:+UseG1GC -jar "$APP_JAR" "${args[@]}" > "$LOGS/app-$mode-$round.log" 2>&1 &
    APP_PID=$!
    up=0
    for _ in $(seq 1 300); do
      if curl -fs -o /dev/null "http://127.0.0.1:$HTTP_PORT/api/hello"; then up=1; break; fi
      sleep 0.2
    done
    [[ $up == 1 ]] || { echo "sample app did not start: see $LOGS/app-$mode-$round.log" >&2; exit 1; }
    header=$(curl -si "http://127.0.0.1:$HTTP_PORT/api/hello" | grep -ci '^RateLimit:' || true)
    # warm-up: at least HTTP_WARM seconds and HTTP_WARM_REQUESTS requests (at most HTTP_WARM_MAX seconds), so
    # that both modes reach the JIT's steady state even where other work slows the requests down: a warm-up
    # by time alone leaves the throttled app, which has more code to compile, less compiled than its peer
    warmed=0; warm_started=$(date +%s); : > "$LOGS/wrk-warm-$mode-$round.txt"
    while :; do
      wrk -t2 -c16 -d"${HTTP_WARM_STEP}s" "http://127.0.0.1:$HTTP_PORT/api/hello" >> "$LOGS/wrk-warm-$mode-$round.txt"
      warmed=$(awk '/requests in/{n += $1} END {print n + 0}' "$LOGS/wrk-warm-$mode-$round.txt")
      spent=$(( $(date +%s) - warm_started ))
      if (( spent >= HTTP_WARM_MAX )) || { (( spent >= HTTP_WARM )) && (( warmed >= HTTP_WARM_REQUESTS )); }; then break; fi
    done
    # the app's CPU time over the measured seconds (utime + stime, clock ticks): CPU per request is
    # steadier than requests per second on a machine whose cores other work shares
    cpu0=$(awk '{print $14 + $15}' "/proc/$APP_PID/stat")
    wrk -t2 -c16 -d"${HTTP_MEASURE}s" --timeout 2s --latency "http://127.0.0.1:$HTTP_PORT/api/hello" \
      > "$LOGS/wrk-$mode-$round.txt"
    cpu1=$(awk '{print $14 + $15}' "/proc/$APP_PID/stat")
    rps=$(awk '/^Requests\/sec:/{print $2}' "$LOGS/wrk-$mode-$round.txt")
    p50=$(awk '$1=="50%"{print $2}' "$LOGS/wrk-$mode-$round.txt")
    p99=$(awk '$1=="99%"{print $2}' "$LOGS/wrk-$mode-$round.txt")
    non2xx=$(awk '/Non-2xx or 3xx responses:/{print $NF}' "$LOGS/wrk-$mode-$round.txt")
    requests=$(awk '/requests in/{print $1}' "$LOGS/wrk-$mode-$round.txt")
    cpu_us=$(awk -v c=$(( cpu1 - cpu0 )) -v hz="$(getconf CLK_TCK)" -v n="$requests" 'BEGIN{printf "%.1f", c / hz * 1e6 / n}')
    echo "mode=$mode round=$round rps=$rps p50=$p50 p99=$p99 requests=$requests non2xx=${non2xx:-0} ratelimit_header=$header cpu_us=$cpu_us" \
      | tee -a "$RESULTS/http.txt"
    kill "$APP_PID"; wait "$APP_PID" 2>/dev/null || true; APP_PID=""
  done
done

# ------------------------------------------------------------------ summary
{
  echo "load average after (1/5/15 min): $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "elapsed: $(( $(date +%s) - STARTED )) s (build included)"
} >> "$RESULTS/machine.txt"
log "summary"
java -cp "$JAR" dev.throttle.bench.Report "$RESULTS" > /dev/null
cat "$RESULTS/machine.txt"
echo "wrote $RESULTS/summary.md"
