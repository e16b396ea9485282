#!/usr/bin/env bash
# Compile the bytecode of the benchmark's Pythons once, as an installed application has it.
# Usage: benchmarks/compile_bytecode.sh PYTHON...
# With PYTHONDONTWRITEBYTECODE set (as on the machines these benchmarks ran on) Python never writes .pyc
# files, so every run compiled aiohttp, Scrapy and the rest again: ~0.4 s of a mocra worker's run time
# (its downloader imports aiohttp when the engine starts) and more for Scrapy. Existing .pyc files are
# still read with the variable set, so compiling once makes every run start as a deployed one would.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
for py in "$@"; do
  "$py" - "$REPO" <<'PY'
import compileall, os, site, sys, sysconfig
dirs = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
repo = sys.argv[1]
if sys.prefix.startswith(repo):  # the workspace's own venv: its editable packages too
    dirs |= {os.path.join(repo, "packages", p, "src") for p in os.listdir(os.path.join(repo, "packages"))}
for d in sorted(dirs):
    if os.path.isdir(d):
        compileall.compile_dir(d, quiet=1, workers=0)
PY
done
