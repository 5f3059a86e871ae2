#!/usr/bin/env bash
# The PostgreSQL step of benchmarks/README.md: the jdbc store beside Bucket4j's PostgreSQL proxy managers
# and a one-statement baseline, on one local PostgreSQL, 1 / 16 / 64 callers, a hot key and Zipf keys
# (dev.throttle.bench.JdbcLoad). Writes benchmarks/results/jdbc.txt, replacing only that file (alone, it
# also regenerates summary.md: the other tables from the files results/ holds). run.sh calls it as one
# of its steps; it runs alone too:
#
#   bash benchmarks/jdbc.sh            the full step: about 8 minutes on 2 quiet cores, build excluded
#   QUICK=1 bash benchmarks/jdbc.sh    tiny settings: checks the step works, figures meaningless
#
# PostgreSQL: Debian's server (the newest /usr/lib/postgresql/*/bin; `apt-get install postgresql` as root
# when there is none), a fresh cluster in a temporary directory on a free loopback port, stopped and
# removed at the end; as root, run as the `postgres` user the package creates. Its settings are
# PostgreSQL's defaults (fsync and synchronous commit on) but for max_connections, and PG_SETTINGS
# (for example PG_SETTINGS='-c synchronous_commit=off', to see what the WAL flush costs; written into
# the results' header). JDBC_URL=jdbc:postgresql://... uses a running PostgreSQL instead (its server
# CPU is then counted only when its data directory is readable).
#
# Alone (not from run.sh), a full run builds benchmarks/target/benchmarks.jar (SKIP_BUILD=1: use the
# jar there), holds /tmp/bench.lock while it measures and waits (at most LOAD_WAIT seconds, 600 unless set)
# for a 1-minute load average below 1.0, as run.sh does.
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
  JDBC_TIMES=(1 0.2 0.5)       # JVM warm-up, per-case warm-up, measurement (seconds)
else
  JDBC_TIMES=(4 1 3)
fi
# JDBC_VARIANTS / JDBC_REGIMES (space-separated) narrow the step, for trying it
# (throttle-token-bucket@10: the store with max-connections 10, the whole pool, as Bucket4j may use it;
# throttle-token-bucket+near-cache: with throttle.store.jdbc.near-cache.enabled)
read -r -a VARIANTS <<<"${JDBC_VARIANTS:-select-1 throttle-token-bucket throttle-token-bucket+near-cache throttle-token-bucket@10 bucket4j-select-for-update bucket4j-advisory-lock}"
read -r -a REGIMES <<<"${JDBC_REGIMES:-api high}"

log() { printf '\n== %s  [%ss]\n' "$*" "$(( $(date +%s) - STARTED ))"; }
mkdir -p "$RESULTS" "$LOGS"

if [[ "$FROM_RUN" != 1 && "${SKIP_BUILD:-0}" != 1 ]]; then
  log "build: benchmarks jar"
  ./mvnw -B -ntp -q -Pbench -pl benchmarks -am -DskipTests package
fi
test -f "$JAR" || { echo "no $JAR: build it with ./mvnw -Pbench -pl benchmarks -am -DskipTests package" >&2; exit 1; }

PG_DIR=""; PG_CTL=""; HOLD_LOCK=0
as_postgres() { if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
  if [[ -n "$PG_DIR" ]]; then
    as_postgres "$PG_CTL" -D "$PG_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$PG_DIR"
  fi
  if [[ "$HOLD_LOCK" == 1 ]]; then rm -f "$LOCK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ -z "${JDBC_URL:-}" ]]; then
  PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
  if [[ -z "$PG_BIN" ]]; then
    log "installing postgresql (Debian packages)"
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
      PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
    else
      echo "cannot install postgresql: not root or no apt-get (or set JDBC_URL)" >&2
      exit 1
    fi
  fi
  PG_CTL="$PG_BIN/pg_ctl"
  free_port() {
    local port
    for port in $(seq "$1" "$(( $1 + 200 ))"); do
      if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return; fi
    done
    echo "no free port from $1" >&2; return 1
  }
  PG_PORT=$(free_port 25432)
  PG_DIR=$(mktemp -d /tmp/throttle-bench-pg.XXXXXX)
  chmod 755 "$PG_DIR"
  if [[ $(id -u) == 0 ]]; then chown postgres: "$PG_DIR"; fi
  log "PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$PG_PORT ($PG_DIR)"
  as_postgres "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres --auth=trust -E UTF8 --locale=C >"$LOGS/initdb.log" 2>&1
  # 64 callers on two pools of 10 (the measured one and the counted one) and the store's own: well under 100,
  # but a slow previous case may leave connections closing
  as_postgres "$PG_CTL" -D "$PG_DIR/data" -l "$PG_DIR/postgres.log" -w \
    -o "-p $PG_PORT -k $PG_DIR -c listen_addresses=127.0.0.1 -c max_connections=200 ${PG_SETTINGS:-}" start >/dev/null
  URL="jdbc:postgresql://127.0.0.1:$PG_PORT/postgres?user=postgres"
  PG_VERSION=$("$PG_BIN/postgres" --version)
else
  URL="$JDBC_URL"
  PG_VERSION="external ($JDBC_URL)"
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

OUT="$RESULTS/jdbc.txt"
{
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "# command: $( [[ "$QUICK" == 1 ]] && echo 'QUICK=1 ')bash benchmarks/jdbc.sh$( [[ "$FROM_RUN" == 1 ]] && echo ' (from run.sh)')"
  echo "# commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "# postgresql: $PG_VERSION; settings: defaults but max_connections=200 ${PG_SETTINGS:-}"
  echo "# times (JVM warm-up, case warm-up, measured seconds): ${JDBC_TIMES[*]}"
  echo "# load average before (1/5/15 min): $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$OUT"
for regime in "${REGIMES[@]}"; do
  for variant in "${VARIANTS[@]}"; do
    log "postgresql, regime $regime, $variant"
    java -Xms512m -Xmx1g -cp "$JAR" dev.throttle.bench.JdbcLoad "$URL" "$OUT" "${JDBC_TIMES[@]}" \
      "$variant" "$regime" hot,zipf 1,16,64 | cut -c1-240
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
