#!/usr/bin/env bash
# Interleaved A/B of the mocra bench crawl alone (no Scrapy, no raw loop) between git revisions.
# Usage: benchmarks/ab_crawl.sh ROUNDS REV...        e.g. benchmarks/ab_crawl.sh 4 7f2465c HEAD
#   Each REV is exported with `git archive` to a temporary tree and run with PYTHONPATH pointing at its
#   packages (the repo's .venv supplies the dependencies), under the harness's measure.py, in rotating order;
#   every crawl is checked against the ground truth. BENCH_DIR, BENCH_VENV as in run_crawl.sh;
#   results in $BENCH_RESULTS (default /tmp/benchresults_ab), one group per revision.
#   Run it under the shared lock: flock /tmp/bench.lock benchmarks/ab_crawl.sh 4 OLD NEW
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH="$(cd "${BENCH_DIR:-$REPO/../shared/bench}" && pwd)"
PY="${BENCH_VENV:-/tmp/benchvenv}/bin/python"
RES="${BENCH_RESULTS:-/tmp/benchresults_ab}"
ROUNDS="${1:?usage: ab_crawl.sh ROUNDS REV...}"; shift
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
"$BENCH/nginx_ctl.sh" status >/dev/null || "$BENCH/nginx_ctl.sh" start
NAMES=()
for rev in "$@"; do
  name="$(git -C "$REPO" rev-parse --short "$rev")"
  mkdir -p "$TMP/$name"; git -C "$REPO" archive "$rev" packages | tar -x -C "$TMP/$name"
  "$REPO/.venv/bin/python" -m compileall -q "$TMP/$name/packages" >/dev/null
  rm -rf "${RES:?}/$name"; NAMES+=("$name")
done
mkdir -p /tmp/benchout
n=${#NAMES[@]}
for i in $(seq "$ROUNDS"); do
  for j in $(seq 0 $((n - 1))); do
    name=${NAMES[$(((i - 1 + j) % n))]}
    pp="$(ls -d "$TMP/$name"/packages/*/src | paste -sd:)"
    (cd /tmp/benchout && PYTHONPATH="$pp" BENCH_RESULTS="$RES" "$PY" "$BENCH/measure.py" --name "$name" -- \
      "$REPO/.venv/bin/python" "$REPO/benchmarks/mocra_bench_spider.py" --out "/tmp/benchout/ab_$name.jsonl")
    "$PY" "$BENCH/check_output.py" "/tmp/benchout/ab_$name.jsonl"
  done
done
"$PY" "$BENCH/summarize.py" "$RES"
