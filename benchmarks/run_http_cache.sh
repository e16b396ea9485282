#!/bin/bash
# The development HTTP cache on the crawl benchmark (benchmarks/README.md, "HTTP cache"): the bench spider
# without the cache, with an empty cache (every page fetched and stored) and with the full cache (every
# page answered from it), alternating. Needs the bench site (../shared/bench/nginx_ctl.sh start).
#
#   flock /tmp/bench.lock benchmarks/run_http_cache.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/mocra-http-cache}
rm -rf "$out"; mkdir -p "$out"
cache=(-s http_cache.enabled=true -s "http_cache.dir=$out/cache")
for run in plain cold warm plain2 warm2; do
  case $run in plain*) extra=();; *) extra=("${cache[@]}");; esac
  /usr/bin/time -f "cpu %U+%S s, peak RSS %M KB" .venv/bin/python benchmarks/mocra_bench_spider.py \
    --out "$out/$run.jsonl" ${extra[@]+"${extra[@]}"} 2>"$out/$run.err" >/dev/null
  python3 - "$out/$run.err" "$run" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
d = json.loads(next(line for line in lines if line.startswith('{"tool"')))
print(f"{sys.argv[2]:7} pages {d['pages']} items {d['items']} dead {d['dead_letters']} "
      f"{d['elapsed_s']:.2f} s {d['pages_per_s']:.0f} pages/s, {lines[-1]}")
PY
done
du -sh "$out/cache"
