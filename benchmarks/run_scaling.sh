#!/usr/bin/env bash
# Scaling under CPU caps: the crawl of run_distributed.sh with every worker in its own cgroup (cgroup v1 `cpu`
# controller, CFS quota), the broker, Redis and nginx uncapped, so that a 2-core machine can show how the
# workers scale. Rows (group names in BENCH_RESULTS):
#   memory_1w_c50, memory_1w_c40        the in-memory single process at 0.50 and 0.40 CPU
#   B_1w_c50, B_2w_c50, B_1w_c40, B_4w_c40   for each backend B in BACKENDS (redis, nats)
#   scrapy_redis_1w_c50, scrapy_redis_2w_c50
# Usage: benchmarks/run_scaling.sh [RUNS=1]
#   ROWS          space-separated globs of the rows to run (default all), e.g. "memory_* redis_*"
#   BACKENDS      default "redis nats"
#   DIST_TIMEOUT  seconds before the workers of one run are killed (default 300); DIST_STALL as there
#   BENCH_RESULTS results dir (default /tmp/benchresults-scaling); the rows run are replaced unless APPEND=1
#   README=0      do not write the table into benchmarks/README.md (section "Scaling under CPU caps")
#   README_COMMAND  the command line quoted above the table (default: this invocation)
# Every crawl's items are checked against the site's ground truth. The cgroups (under
# /sys/fs/cgroup/cpu/mocra-scaling-PID) are made here and removed at exit; where they cannot be made the
# script says so and runs uncapped (rows *_c0: 1, 2 and 4 workers, no cap).
set -euo pipefail
RUNS="${1:-1}"
BACKENDS="${BACKENDS:-redis nats}"
TIMEOUT="${DIST_TIMEOUT:-300}"
ROWS="${ROWS:-*}"
export BENCH_RESULTS="${BENCH_RESULTS:-/tmp/benchresults-scaling}"
source "$(dirname "${BASH_SOURCE[0]}")/dist_lib.sh"  # REPO PY MOCRA_PY OUTDIR ...; del_keys, measure ...
dist_prepare

CPU_ROOT=/sys/fs/cgroup/cpu
CG="$CPU_ROOT/mocra-scaling-$$"
CAPPED=1
if ! { mkdir "$CG" && echo 100000 >"$CG/cpu.cfs_period_us"; } 2>/dev/null; then
  CAPPED=0
  echo "!! cannot create a cgroup under $CPU_ROOT (cgroup v1 cpu controller, as root): running UNCAPPED" >&2
fi

cg_clear() {  # remove the workers' cgroups (moving any process still in one back to the root group)
  local d p
  for d in "$CG"/w*; do
    [ -d "$d" ] || continue
    while read -r p; do echo "$p" >"$CPU_ROOT/cgroup.procs" 2>/dev/null || true; done <"$d/cgroup.procs"
    rmdir "$d"
  done
}
cleanup() { if [ "$CAPPED" = 1 ]; then cg_clear; rmdir "$CG" 2>/dev/null || true; fi; }
trap cleanup EXIT
trap 'exit 130' INT TERM  # so that the EXIT trap removes the cgroups on Ctrl-C or kill too

cg_make() {  # cg_make PROCS CAP%: one cgroup per worker, w0 … w(PROCS-1), each capped at CAP% of a CPU
  local k
  cg_clear
  for ((k = 0; k < $1; k++)); do
    mkdir "$CG/w$k"
    echo 100000 >"$CG/w$k/cpu.cfs_period_us"
    echo $(($2 * 1000)) >"$CG/w$k/cpu.cfs_quota_us"
  done
}

STEPS=("memory 1 50" "memory 1 40")
for b in $BACKENDS; do STEPS+=("$b 1 50" "$b 2 50" "$b 1 40" "$b 4 40"); done
STEPS+=("scrapy_redis 1 50" "scrapy_redis 2 50")
if [ "$CAPPED" = 0 ]; then  # no caps: 1, 2 and 4 workers, each once
  STEPS=("memory 1 0"); for b in $BACKENDS; do STEPS+=("$b 1 0" "$b 2 0" "$b 4 0"); done
  STEPS+=("scrapy_redis 1 0" "scrapy_redis 2 0")
fi
SELECTED=()
for step in "${STEPS[@]}"; do
  read -r target procs cap <<<"$step"
  for pattern in $ROWS; do
    # shellcheck disable=SC2053  # a glob on purpose
    if [[ "${target}_${procs}w_c$cap" == $pattern ]]; then SELECTED+=("$step"); break; fi
  done
done
[ ${#SELECTED[@]} -gt 0 ] || { echo "no row matches ROWS=$ROWS" >&2; exit 2; }
if [ "${APPEND:-0}" != 1 ]; then
  for step in "${SELECTED[@]}"; do
    read -r target procs cap <<<"$step"; rm -rf "${BENCH_RESULTS:?}/${target}_${procs}w_c$cap"
  done
fi

run_row() {  # run_row TARGET PROCS CAP ROUND
  local target=$1 procs=$2 cap=$3 group="$1_$2w_c$3" job="scale-$1-$2w-c$3-$$-$4" wrap=() args=()
  if [ "$CAPPED" = 1 ]; then
    cg_make "$procs" "$cap"
    # each worker enters its own cgroup before exec: interpreter start and imports are capped too
    wrap=(sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' cg "$CG/w{k}")
  fi
  case $target in
    memory) args=() ;;
    redis) args=(--queue "$REDIS/$MOCRA_DB" --job "$job") ;;
    nats) args=(--queue "nats://127.0.0.1:4222" --job "$job" --coordination "$REDIS/$MOCRA_DB") ;;
  esac
  if [ "$target" = scrapy_redis ]; then
    del_keys "$SR_DB" "srbench:*"
    redis-cli -n "$SR_DB" rpush srbench:start_urls '{"url": "http://127.0.0.1:8731/list/1.html"}' >/dev/null
    measure "$group" "$procs" "$TIMEOUT" "${wrap[@]}" "$VENV/bin/scrapy" runspider \
      "$REPO/benchmarks/scrapy_redis_bench.py" -O "$OUTDIR/dist-$group-{k}.jsonl"
    del_keys "$SR_DB" "srbench:*"
  else
    measure "$group" "$procs" "$TIMEOUT" "${wrap[@]}" "$MOCRA_PY" "$SPIDER" \
      --out "$OUTDIR/dist-$group-{k}.jsonl" "${args[@]}"
    if [ "$target" != memory ]; then del_keys "$MOCRA_DB" "*$job*"; fi
    if [ "$target" = nats ]; then del_nats_streams "mocra-$job"; fi
  fi
  if [ "$CAPPED" = 1 ]; then cg_clear; fi
}

for i in $(seq "$RUNS"); do
  echo "== round $i of $RUNS ($([ "$CAPPED" = 1 ] && echo "workers capped by $CG" || echo UNCAPPED))"
  order=("${SELECTED[@]}")
  if [ $((i % 2)) = 0 ]; then  # every other round in reverse order
    order=(); for ((j = ${#SELECTED[@]} - 1; j >= 0; j--)); do order+=("${SELECTED[j]}"); done
  fi
  for step in "${order[@]}"; do
    echo "-- $step"
    # shellcheck disable=SC2086  # TARGET PROCS CAP
    run_row $step "$i"
  done
done
SCALING="$REPO/benchmarks/bench_scaling.py"
(cd "$REPO/benchmarks" && "$MOCRA_PY" "$SCALING" summary --results "$BENCH_RESULTS") \
  | tee "$BENCH_RESULTS/scaling_summary.md"
if [ "${README:-1}" = 1 ]; then
  invocation="benchmarks/run_scaling.sh $RUNS"
  [ "$ROWS" = "*" ] || invocation="ROWS=\"$ROWS\" $invocation"
  [ "${APPEND:-0}" != 1 ] || invocation="APPEND=1 $invocation"
  note="workers capped by cgroup v1 CPU quotas; broker, Redis and nginx uncapped"
  [ "$CAPPED" = 1 ] || note="UNCAPPED: this machine could not create cgroups"
  (cd "$REPO/benchmarks" && "$MOCRA_PY" "$SCALING" readme --results "$BENCH_RESULTS" \
    --readme "$REPO/benchmarks/README.md" --command "${README_COMMAND:-$invocation}" --note "$note")
fi
