#!/usr/bin/env bash
# Crawl benchmark: mocra vs Scrapy vs the harness's raw aiohttp loop on the shared bench site, in interleaved
# rounds (the order rotates each round).
# Usage: benchmarks/run_crawl.sh [RUNS=3]
#   BENCH_DIR     the shared harness (default: ../shared/bench beside the repo), used by path, read-only
#   BENCH_VENV    its venv with Scrapy (default /tmp/benchvenv; created by its setup.sh if missing)
#   MOCRA_PY      the Python that runs mocra (default: the repo's .venv)
#   MOCRA_ARGS    extra arguments for the mocra spider, e.g. "-s crawl.parse_workers=16"
#   RAW=0         skip the raw aiohttp loop (raw_client.py --client aiohttp: the 20,000 known item URLs,
#                 no dedup, no link following; the one-process ceiling mocra is compared with)
#   BENCH_RESULTS results dir (default /tmp/benchresults); groups "scrapy", "mocra" and "raw_aiohttp" are
#                 replaced unless APPEND=1
# Every crawl is checked against the site's ground truth (20000 items, no duplicates); a mismatch fails.
set -euo pipefail
RUNS="${1:-3}"
export BENCH_RESULTS="${BENCH_RESULTS:-/tmp/benchresults}"
source "$(dirname "${BASH_SOURCE[0]}")/crawl_lib.sh"  # REPO BENCH PY MOCRA_PY OUTDIR; run_scrapy, run_raw ...
crawl_prepare
if [ "${APPEND:-0}" != 1 ]; then rm -rf "${BENCH_RESULTS:?}/scrapy" "${BENCH_RESULTS:?}/mocra" "${BENCH_RESULTS:?}/raw_aiohttp"; fi

# shellcheck disable=SC2086  # MOCRA_ARGS is split on purpose
run_mocra() { crawl_mocra mocra ${MOCRA_ARGS:-}; }

CRAWLERS=(scrapy mocra)
[ "${RAW:-1}" = 0 ] || CRAWLERS+=(raw)
crawl_rounds "$RUNS" "${CRAWLERS[@]}"
"$PY" "$REPO/benchmarks/bench_crawl.py" --bench "$BENCH" --results "$BENCH_RESULTS" \
  | tee "$BENCH_RESULTS/crawl_summary.md"
