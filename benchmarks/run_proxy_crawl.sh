#!/usr/bin/env bash
# The bench crawl direct vs through 4 local proxies (benchmarks/bench_proxy_crawl.py), set up and torn down.
# Usage: benchmarks/run_proxy_crawl.sh [ROUNDS=3] [extra arguments for bench_proxy_crawl.py]
#   VARIANTS      default "direct,pool,pool-proxypy"
#   PROXYPY_VENV  proxy.py's own venv (default /tmp/proxypy-venv; made here if missing: a benchmark-only
#                 install from PyPI, never a dependency of the project)
#   BENCH_DIR     the shared harness (default: ../shared/bench beside the repo), used by path, read-only
# Starts the harness's nginx if it is down and stops it at the end if it started it.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH="$(cd "${BENCH_DIR:-$REPO/../shared/bench}" && pwd)"
ROUNDS="${1:-3}"
shift || true
VARIANTS="${VARIANTS:-direct,pool,pool-proxypy}"
export PROXYPY_VENV="${PROXYPY_VENV:-/tmp/proxypy-venv}"

if [ ! -f /tmp/benchsite/_meta/truth.jsonl ] || [ ! -x /usr/sbin/nginx ]; then "$BENCH/setup.sh"; fi
if [[ "$VARIANTS" == *pool-proxypy* ]] && [ ! -x "$PROXYPY_VENV/bin/proxy" ]; then
  python3 -m venv "$PROXYPY_VENV"
  "$PROXYPY_VENV/bin/pip" install -q proxy.py
fi
started=0
if ! "$BENCH/nginx_ctl.sh" status >/dev/null; then "$BENCH/nginx_ctl.sh" start; started=1; fi
trap 'if [ "$started" = 1 ]; then "$BENCH/nginx_ctl.sh" stop; fi' EXIT
cd "$REPO"
uv run python benchmarks/bench_proxy_crawl.py --rounds "$ROUNDS" --variants "$VARIANTS" "$@"
