# Shared part of the one-process crawl benchmarks (run_crawl.sh, run_crawl_transports.sh): sourced, not run.
# Sets REPO BENCH VENV PY MOCRA_PY OUTDIR (each overridable as in run_crawl.sh; the caller exports
# BENCH_RESULTS first) and defines crawl_prepare, crawl_mocra, run_scrapy, run_raw and crawl_rounds.
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH="$(cd "${BENCH_DIR:-$REPO/../shared/bench}" && pwd)"
VENV="${BENCH_VENV:-/tmp/benchvenv}"
PY="$VENV/bin/python"
MOCRA_PY="${MOCRA_PY:-$REPO/.venv/bin/python}"
OUTDIR=/tmp/benchout

crawl_prepare() {  # the bench site and Scrapy's venv, nginx, compiled bytecode, BENCH_RESULTS and OUTDIR
  if [ ! -x "$PY" ] || [ ! -x "$VENV/bin/scrapy" ] || [ ! -f /tmp/benchsite/_meta/truth.jsonl ] \
      || [ ! -x /usr/sbin/nginx ]; then
    "$BENCH/setup.sh"
  fi
  "$BENCH/nginx_ctl.sh" status >/dev/null || "$BENCH/nginx_ctl.sh" start
  [ -x "$MOCRA_PY" ] || { echo "no Python at $MOCRA_PY: run 'uv sync' in $REPO" >&2; exit 1; }
  "$REPO/benchmarks/compile_bytecode.sh" "$MOCRA_PY" "$PY"  # every run starts as an installed app would
  mkdir -p "$BENCH_RESULTS" "$OUTDIR"
}

crawl_mocra() {  # crawl_mocra GROUP [SPIDER ARGS...]: one mocra crawl measured into GROUP, then checked
  local group="$1"
  shift
  (cd "$OUTDIR" && "$PY" "$BENCH/measure.py" --name "$group" -- \
    "$MOCRA_PY" "$REPO/benchmarks/mocra_bench_spider.py" --out "$OUTDIR/$group.jsonl" "$@")
  "$PY" "$BENCH/check_output.py" "$OUTDIR/$group.jsonl"
}

run_scrapy() {
  # as the harness's run_scrapy.sh: from $OUTDIR, so that no scrapy.cfg is picked up
  (cd "$OUTDIR" && "$PY" "$BENCH/measure.py" --name scrapy -- \
    "$VENV/bin/scrapy" runspider "$BENCH/scrapy_bench.py" -O "$OUTDIR/scrapy.jsonl")
  "$PY" "$BENCH/check_output.py" "$OUTDIR/scrapy.jsonl"
}

run_raw() {
  # as the harness's run_raw.sh aiohttp, one run
  (cd "$OUTDIR" && "$PY" "$BENCH/measure.py" --name raw_aiohttp -- \
    "$PY" "$BENCH/raw_client.py" --client aiohttp --out "$OUTDIR/raw_aiohttp.jsonl")
  "$PY" "$BENCH/check_output.py" "$OUTDIR/raw_aiohttp.jsonl"
}

crawl_rounds() {  # crawl_rounds RUNS NAME...: RUNS rounds of run_NAME each; round i starts with the i-th
  local runs="$1"
  shift
  local crawlers=("$@") n=$# i j
  for i in $(seq "$runs"); do
    echo "== round $i of $runs"
    for j in $(seq 0 $((n - 1))); do  # each crawler goes first in turn
      "run_${crawlers[$(((i - 1 + j) % n))]}"
    done
  done
}
