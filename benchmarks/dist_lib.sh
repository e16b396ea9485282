# Shared part of the distributed benchmarks (run_distributed.sh, run_scaling.sh): sourced, not run.
# Sets REPO BENCH VENV PY MOCRA_PY OUTDIR DIST SPIDER REDIS MOCRA_DB SR_DB STALL (each overridable as in
# run_distributed.sh) and defines dist_prepare, del_keys, del_nats_streams, servers_cpu, measure.
# TANSU_PID, when set by the caller, is counted among the servers.
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH="$(cd "${BENCH_DIR:-$REPO/../shared/bench}" && pwd)"
VENV="${BENCH_VENV:-/tmp/benchvenv}"
PY="$VENV/bin/python"
MOCRA_PY="${MOCRA_PY:-$REPO/.venv/bin/python}"
STALL="${DIST_STALL:-120}"
MOCRA_DB="${MOCRA_DB:-13}"
SR_DB=14
REDIS="redis://127.0.0.1:6379"
OUTDIR=/tmp/benchout
DIST="$REPO/benchmarks/bench_distributed.py"
SPIDER="$REPO/benchmarks/mocra_bench_spider.py"
TANSU_PID="${TANSU_PID:-}"

dist_prepare() {  # the bench site, nginx, scrapy-redis in the harness venv, compiled bytecode, BENCH_RESULTS
  if [ ! -x "$PY" ] || [ ! -x "$VENV/bin/scrapy" ] || [ ! -f /tmp/benchsite/_meta/truth.jsonl ] \
      || [ ! -x /usr/sbin/nginx ]; then
    "$BENCH/setup.sh"
  fi
  "$PY" -c "import scrapy_redis" 2>/dev/null || "$VENV/bin/pip" install -q scrapy-redis
  "$BENCH/nginx_ctl.sh" status >/dev/null || "$BENCH/nginx_ctl.sh" start
  [ -x "$MOCRA_PY" ] || { echo "no Python at $MOCRA_PY: run 'uv sync' in $REPO" >&2; exit 1; }
  "$REPO/benchmarks/compile_bytecode.sh" "$MOCRA_PY" "$PY"  # every run starts as an installed app would
  mkdir -p "$BENCH_RESULTS" "$OUTDIR"
}

del_keys() {  # del_keys DB PATTERN: delete the matching keys of one Redis db
  redis-cli -n "$1" --scan --pattern "$2" | xargs -r -n 500 redis-cli -n "$1" del >/dev/null
}

del_nats_streams() {  # del_nats_streams PREFIX
  "$MOCRA_PY" - "$1" <<'EOF'
import sys, anyio, nats
async def main(prefix: str) -> None:
    nc = await nats.connect("nats://127.0.0.1:4222")
    js = nc.jetstream()
    for info in await js.streams_info():
        if info.config.name and info.config.name.startswith(prefix):
            await js.delete_stream(info.config.name)
    await nc.close()
anyio.run(main, sys.argv[1])
EOF
}

servers_cpu() {  # CPU seconds used so far by the servers the workers talk to (redis, nats, tansu)
  local pids ticks=0 p
  pids="$(pgrep -x redis-server || true) $(pgrep -x nats-server || true) $TANSU_PID"
  for p in $pids; do
    if [ -r "/proc/$p/stat" ]; then
      ticks=$((ticks + $(awk '{print $14 + $15}' "/proc/$p/stat")))
    fi
  done
  echo "$ticks $(getconf CLK_TCK)" | awk '{printf "%.2f", $1 / $2}'
}

measure() {  # measure GROUP PROCS TIMEOUT CMD...: run the workers under measure.py, never fail the script
  local group=$1 procs=$2 timeout=$3 before after; shift 3
  rm -f "$OUTDIR/dist-$group"-*.jsonl
  before=$(servers_cpu)
  (cd "$OUTDIR" && "$PY" "$BENCH/measure.py" --name "$group" -- \
    "$MOCRA_PY" "$DIST" workers --procs "$procs" --timeout "$timeout" --stall "$STALL" \
    --watch "$OUTDIR/dist-$group-*.jsonl" -- "$@") || echo "!! $group: run failed (recorded)"
  after=$(servers_cpu)
  "$MOCRA_PY" "$DIST" check --record "$BENCH_RESULTS/$group" \
    --servers-cpu "$(echo "$before $after" | awk '{printf "%.2f", $2 - $1}')" "$OUTDIR/dist-$group"-*.jsonl \
    || echo "!! $group: check failed (recorded)"
}
