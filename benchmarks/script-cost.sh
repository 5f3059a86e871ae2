#!/usr/bin/env bash
# The server-side cost of each Redis script per call (measured for the README of an earlier round, in git
# history): INFO commandstats usec_per_call of EVALSHA (the time Redis spent in the call, script and its
# redis.call()s included) after CONFIG RESETSTAT, and the server's CPU per call (INFO cpu), for the
# scripts of several commits, interleaved: every round runs each commit's script once, in turn.
#
#   bash benchmarks/script-cost.sh <rounds> <calls> <label>=<commit or "wt"> ...
#   e.g. bash benchmarks/script-cost.sh 8 20000 runC=f00c3ab main=c68a4bf new=wt
#
# A commit before the prelude (run C, f00c3ab) has its script built as RedisThrottleScripts built it
# then (numbers line + body); later ones as now (numbers line + prelude.lua + body). The policies are
# the benchmarks' (Workload): api = 100/s per key, burst 100 (hot key: nearly every call refused);
# high = 1,000,000/s (every call allowed and written). One key, redis-benchmark -c 1 -P 10, ARGV
# a 1 '' (Redis's TIME, as the store calls it by default). ALGS and REGIMES narrow the cases.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=$1; calls=$2; shift 2
S=throttle-spring-boot-starter/src/main/resources/META-INF/throttle/scripts
WORK=$(mktemp -d)
declare -A NUMS=([gcra-api]="100, 10000, 1000000" [token_bucket-api]="100, 1, 10" [fixed_window-api]="100, 1000"
  [gcra-high]="1000000, 1, 1000000" [token_bucket-high]="1000000, 1000, 1" [fixed_window-high]="1000000, 1000")
labels=()
for spec in "$@"; do
  label=${spec%%=*}; rev=${spec#*=}; labels+=("$label")
  get() { if [ "$rev" = wt ]; then cat "$S/$1"; else git show "$rev:$S/$1"; fi; }
  for alg in gcra token_bucket fixed_window; do
    for regime in api high; do
      { echo "local P = {${NUMS[$alg-$regime]}}"
        if get prelude.lua >/dev/null 2>&1; then get prelude.lua; fi
        get $alg.lua; } > "$WORK/$label-$alg-$regime.lua"
    done
  done
done
free_port() {
  local port
  for port in $(seq "$1" "$(( $1 + 200 ))"); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return; fi
  done
  return 1
}
PORT=$(free_port 26700)
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no --logfile /dev/null &
REDIS_PID=$!
trap 'kill $REDIS_PID 2>/dev/null; wait $REDIS_PID 2>/dev/null || true; rm -rf "$WORK"' EXIT
RC=(redis-cli -p "$PORT")
for _ in $(seq 1 50); do "${RC[@]}" ping >/dev/null 2>&1 && break; sleep 0.1; done
cpu() { "${RC[@]}" info cpu | tr -d '\r' | awk -F: '/^used_cpu_(user|sys):/{s+=$2} END{printf "%.6f", s}'; }
echo "# date $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(git rev-parse --short HEAD) $(redis-server --version | cut -d' ' -f1-3) nproc $(nproc) load $(cut -d' ' -f1-3 /proc/loadavg)"
for spec in "$@"; do echo "# $spec"; done
for r in $(seq 1 "$rounds"); do
  for alg in ${ALGS:-gcra token_bucket fixed_window}; do
    for regime in ${REGIMES:-api high}; do
      for label in "${labels[@]}"; do
        sha=$("${RC[@]}" script load "$(cat "$WORK/$label-$alg-$regime.lua")")
        "${RC[@]}" flushall >/dev/null; "${RC[@]}" config resetstat >/dev/null
        c0=$(cpu)
        redis-benchmark -p "$PORT" -c 1 -n "$calls" -P 10 -q EVALSHA "$sha" 1 "throttle:{bench:hot}" a 1 '' >/dev/null 2>&1
        c1=$(cpu)
        line=$("${RC[@]}" info commandstats | tr -d '\r' | grep '^cmdstat_evalsha:')
        n=$(echo "$line" | sed 's/^cmdstat_evalsha:calls=\([0-9]*\),.*/\1/')
        upc=$(echo "$line" | sed 's/.*usec_per_call=\([0-9.]*\).*/\1/')
        failed=$(echo "$line" | sed 's/.*failed_calls=\([0-9]*\).*/\1/')
        echo "$r $label $alg $regime usec_per_call=$upc cpu_per_call=$(echo "($c1 - $c0) * 1000000 / $n" | bc -l | xargs printf '%.2f') calls=$n failed=$failed load=$(cut -d' ' -f1 /proc/loadavg)"
      done
    done
  done
done
