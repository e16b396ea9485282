#!/usr/bin/env bash
# The crawl of run_crawl.sh with the downloader as the variable: mocra with download.transport=aiohttp (the
# native default) and with download.transport=httpx-aiohttp (the old default), the raw aiohttp loop, in
# interleaved rounds (the order rotates), then one Scrapy run; every crawl checked against the ground truth.
# Usage: benchmarks/run_crawl_transports.sh [RUNS=3]   (run it under: flock /tmp/bench.lock ...)
#   BENCH_DIR, BENCH_VENV, MOCRA_PY, BENCH_RESULTS (default /tmp/benchresults_transports) as in run_crawl.sh
# Prints bench_crawl.py's table (group "mocra" is the native default) and the harness's summary of all groups.
set -euo pipefail
RUNS="${1:-3}"
export BENCH_RESULTS="${BENCH_RESULTS:-/tmp/benchresults_transports}"
source "$(dirname "${BASH_SOURCE[0]}")/crawl_lib.sh"  # REPO BENCH PY MOCRA_PY OUTDIR; run_scrapy, run_raw ...
rm -rf "${BENCH_RESULTS:?}"
crawl_prepare

run_native() { crawl_mocra mocra -s download.transport=aiohttp; }
run_httpx() { crawl_mocra mocra_httpx_aiohttp -s download.transport=httpx-aiohttp; }

crawl_rounds "$RUNS" native httpx raw
run_scrapy
"$PY" "$REPO/benchmarks/bench_crawl.py" --bench "$BENCH" --results "$BENCH_RESULTS" || true
"$PY" "$BENCH/summarize.py"
