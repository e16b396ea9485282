#!/usr/bin/env bash
# The crawl of run_crawl.sh with the downloader as the variable: mocra with download.transport=aiohttp (the
# native default) and with download.transport=httpx-aiohttp (the old default), the raw aiohttp loop, in
# interleaved rounds (the order rotates), then one Scrapy run; every crawl checked against the ground truth.
# Usage: benchmarks/run_crawl_transports.sh [RUNS=3]   (run it under: flock /tmp/bench.lock ...)
#   BENCH_DIR, BENCH_VENV, MOCRA_PY, BENCH_RESULTS (default /tmp/benchresults_transports) as in run_crawl.sh
# Prints bench_crawl.py's table (group "mocra" is the native default) and the harness's summary of all groups.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH="$(cd "${BENCH_DIR:-$REPO/../shared/bench}" && pwd)"
RUNS="${1:-3}"
VENV="${BENCH_VENV:-/tmp/benchvenv}"
PY="$VENV/bin/python"
MOCRA_PY="${MOCRA_PY:-$REPO/.venv/bin/python}"
export BENCH_RESULTS="${BENCH_RESULTS:-/tmp/benchresults_transports}"
OUTDIR=/tmp/benchout
"$BENCH/nginx_ctl.sh" status >/dev/null || "$BENCH/nginx_ctl.sh" start
"$REPO/benchmarks/compile_bytecode.sh" "$MOCRA_PY" "$PY"
rm -rf "${BENCH_RESULTS:?}"; mkdir -p "$BENCH_RESULTS" "$OUTDIR"

mocra() {  # mocra GROUP TRANSPORT
  (cd "$OUTDIR" && "$PY" "$BENCH/measure.py" --name "$1" -- \
    "$MOCRA_PY" "$REPO/benchmarks/mocra_bench_spider.py" --out "$OUTDIR/$1.jsonl" -s "download.transport=$2")
  "$PY" "$BENCH/check_output.py" "$OUTDIR/$1.jsonl"
}
run_native() { mocra mocra aiohttp; }
run_httpx() { mocra mocra_httpx_aiohttp httpx-aiohttp; }
run_raw() {
  (cd "$OUTDIR" && "$PY" "$BENCH/measure.py" --name raw_aiohttp -- \
    "$PY" "$BENCH/raw_client.py" --client aiohttp --out "$OUTDIR/raw_aiohttp.jsonl")
  "$PY" "$BENCH/check_output.py" "$OUTDIR/raw_aiohttp.jsonl"
}
run_scrapy() {
  (cd "$OUTDIR" && "$PY" "$BENCH/measure.py" --name scrapy -- \
    "$VENV/bin/scrapy" runspider "$BENCH/scrapy_bench.py" -O "$OUTDIR/scrapy.jsonl")
  "$PY" "$BENCH/check_output.py" "$OUTDIR/scrapy.jsonl"
}

CRAWLERS=(native httpx raw)
for i in $(seq "$RUNS"); do
  echo "== round $i of $RUNS"
  for j in 0 1 2; do "run_${CRAWLERS[$(((i - 1 + j) % 3))]}"; done
done
run_scrapy
"$PY" "$REPO/benchmarks/bench_crawl.py" --bench "$BENCH" --results "$BENCH_RESULTS" || true
"$PY" "$BENCH/summarize.py"
