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
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH="$(cd "${BENCH_DIR:-$REPO/../shared/bench}" && pwd)"
RUNS="${1:-3}"
VENV="${BENCH_VENV:-/tmp/benchvenv}"
PY="$VENV/bin/python"
MOCRA_PY="${MOCRA_PY:-$REPO/.venv/bin/python}"
export BENCH_RESULTS="${BENCH_RESULTS:-/tmp/benchresults}"
OUTDIR=/tmp/benchout

if [ ! -x "$PY" ] || [ ! -x "$VENV/bin/scrapy" ] || [ ! -f /tmp/benchsite/_meta/truth.jsonl ] \
    || [ ! -x /usr/sbin/nginx ]; then
  "$BENCH/setup.sh"
fi
"$BENCH/nginx_ctl.sh" status >/dev/null || "$BENCH/nginx_ctl.sh" start
[ -x "$MOCRA_PY" ] || { echo "no Python at $MOCRA_PY: run 'uv sync' in $REPO" >&2; exit 1; }
"$REPO/benchmarks/compile_bytecode.sh" "$MOCRA_PY" "$PY"  # every run starts as an installed app would
mkdir -p "$BENCH_RESULTS" "$OUTDIR"
if [ "${APPEND:-0}" != 1 ]; then rm -rf "${BENCH_RESULTS:?}/scrapy" "${BENCH_RESULTS:?}/mocra" "${BENCH_RESULTS:?}/raw_aiohttp"; fi

run_scrapy() {
  # as the harness's run_scrapy.sh: from $OUTDIR, so that no scrapy.cfg is picked up
  (cd "$OUTDIR" && "$PY" "$BENCH/measure.py" --name scrapy -- \
    "$VENV/bin/scrapy" runspider "$BENCH/scrapy_bench.py" -O "$OUTDIR/scrapy.jsonl")
  "$PY" "$BENCH/check_output.py" "$OUTDIR/scrapy.jsonl"
}

run_mocra() {
  # shellcheck disable=SC2086  # MOCRA_ARGS is split on purpose
  (cd "$OUTDIR" && "$PY" "$BENCH/measure.py" --name mocra -- \
    "$MOCRA_PY" "$REPO/benchmarks/mocra_bench_spider.py" --out "$OUTDIR/mocra.jsonl" ${MOCRA_ARGS:-})
  "$PY" "$BENCH/check_output.py" "$OUTDIR/mocra.jsonl"
}

run_raw() {
  # as the harness's run_raw.sh aiohttp, one run
  (cd "$OUTDIR" && "$PY" "$BENCH/measure.py" --name raw_aiohttp -- \
    "$PY" "$BENCH/raw_client.py" --client aiohttp --out "$OUTDIR/raw_aiohttp.jsonl")
  "$PY" "$BENCH/check_output.py" "$OUTDIR/raw_aiohttp.jsonl"
}

CRAWLERS=(scrapy mocra)
[ "${RAW:-1}" = 0 ] || CRAWLERS+=(raw)
n=${#CRAWLERS[@]}
for i in $(seq "$RUNS"); do
  echo "== round $i of $RUNS"
  for j in $(seq 0 $((n - 1))); do  # round i starts with crawler (i-1) mod n: each goes first in turn
    "run_${CRAWLERS[$(((i - 1 + j) % n))]}"
  done
done
"$PY" "$REPO/benchmarks/bench_crawl.py" --bench "$BENCH" --results "$BENCH_RESULTS" \
  | tee "$BENCH_RESULTS/crawl_summary.md"
