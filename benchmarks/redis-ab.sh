# Sourced by the RedisAB steps (batching.sh, durability.sh), from the project's root, after setting OUT
# (the results file): their settings, log() and the benchmarks jar, built unless run.sh built it
# (FROM_RUN=1) or SKIP_BUILD=1 says to use the one there.
RESULTS=benchmarks/results
JAR=benchmarks/target/benchmarks.jar
STARTED=$(date +%s)
if [[ "${QUICK:-0}" == 1 ]]; then
  TIMES=(1 0.3 2)      # JVM warm-up per variant, each case (seconds), rounds
else
  TIMES=(3 2 5)
fi
mkdir -p "$RESULTS"
log() { printf '\n== %s  [%ss]\n' "$*" "$(( $(date +%s) - STARTED ))"; }

if [[ "${FROM_RUN:-0}" != 1 && "${SKIP_BUILD:-0}" != 1 ]]; then
  log "build: benchmarks jar"
  ./mvnw -B -ntp -q -Pbench -pl benchmarks -am -DskipTests package
fi
test -f "$JAR" || { echo "no $JAR: build it with ./mvnw -Pbench -pl benchmarks -am -DskipTests package" >&2; exit 1; }
