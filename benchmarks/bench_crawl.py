"""Summarize the crawl benchmark: mocra against Scrapy and the raw aiohttp loop, medians over runs, ratios.

Run by `benchmarks/run_crawl.sh` after its rounds; on its own:

    python3 benchmarks/bench_crawl.py [--bench ../shared/bench] [--results /tmp/benchresults] [--json]

Stdlib only (it runs under the harness's venv). The figures come from the harness's own `summarize.py
--json` (by path, so its column definitions apply unchanged): pages/s as the crawler reports it (responses /
engine run time), CPU ms/page from the process's rusage, peak RSS. Ratios are mocra / Scrapy and mocra / raw
aiohttp loop (`raw_client.py --client aiohttp`: 20,000 known item URLs, no dedup, no link following): above 1
is better for pages/s, below 1 is better for CPU and memory. The last lines check issue 22's goal 1 (≥ 8×
Scrapy's pages/s, ≥ 60 % of the raw loop's, ≤ 1.6× its CPU per page).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any

GROUPS = ("scrapy", "mocra", "raw_aiohttp")
PEERS = ("scrapy", "raw_aiohttp")  # mocra is divided by each
# (key in summarize.py --json, column title, decimals)
COLUMNS = (
    ("pps", "pages/s", 0),
    ("wall_pps", "wall p/s", 0),
    ("cpu_ms_pg", "CPU ms/page", 3),
    ("rss", "peak RSS MB", 0),
    ("wall", "wall s", 1),
    ("nginx_cpu", "nginx CPU s", 1),
    ("steal", "steal %", 1),
)
RATIOS = ("pps", "cpu_ms_pg", "rss")
# issue 22, goal 1: (peer, metric, bound, at least?)
GOALS = (
    ("scrapy", "pps", 8.0, True),
    ("raw_aiohttp", "pps", 0.6, True),
    ("raw_aiohttp", "cpu_ms_pg", 1.6, False),
)


def load(bench: str, results: str) -> dict[str, Any]:
    """The harness's summary rows (median, min, max per metric) of every group in `results`."""
    out = subprocess.run(
        [sys.executable, os.path.join(bench, "summarize.py"), results, "--json"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    rows: dict[str, Any] = json.loads(out)
    return rows


def cell(values: list[float], decimals: int) -> str:
    """`median (min–max)`, or just the value for one run."""
    med, lo, hi = values
    if lo == hi:
        return f"{med:,.{decimals}f}"
    return f"{med:,.{decimals}f} ({lo:,.{decimals}f}–{hi:,.{decimals}f})"


def table(rows: dict[str, Any], results: str) -> str:
    """A markdown table of every group, a ratio row per peer and the goal checks."""
    lines = [
        f"Crawl benchmark from {results}: median (min–max) over runs",
        "",
        "| crawler | runs | pages | " + " | ".join(title for _, title, _ in COLUMNS) + " |",
        "|---" * (3 + len(COLUMNS)) + "|",
    ]
    for name in GROUPS:
        if name not in rows:
            continue
        r = rows[name]
        cells = " | ".join(cell(r[key], nd) for key, _, nd in COLUMNS)
        lines.append(f"| {name} | {r['runs']} | {r['pages'][0]:,.0f} | {cells} |")
    all_ratios = ratios(rows)
    for peer, ratio in all_ratios.items():
        cells = " | ".join(f"**{ratio[key]:.2f}×**" if key in ratio else "" for key, _, _ in COLUMNS)
        lines.append(f"| mocra / {peer} | | | {cells} |")
    checks = [
        f"mocra/{peer} {key} {all_ratios[peer][key]:.2f}× {'≥' if at_least else '≤'} {bound}: "
        + ("met" if (all_ratios[peer][key] >= bound) == at_least else "missed")
        for peer, key, bound, at_least in GOALS
        if key in all_ratios.get(peer, {})
    ]
    if checks:
        lines += ["", "Issue 22 goal 1: " + "; ".join(checks)]
    return "\n".join(lines)


def ratios(rows: dict[str, Any]) -> dict[str, dict[str, float]]:
    """mocra / each peer present of the medians of pages/s, CPU ms/page and peak RSS."""
    if "mocra" not in rows:
        return {}
    return {
        peer: {key: rows["mocra"][key][0] / rows[peer][key][0] for key in RATIOS if rows[peer][key][0]}
        for peer in PEERS
        if peer in rows
    }


def main(argv: list[str] | None = None) -> int:
    """Print the comparison; exit 1 if a group has no successful run."""
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", default=os.path.join(here, "..", "..", "shared", "bench"))
    ap.add_argument("--results", default=os.environ.get("BENCH_RESULTS", "/tmp/benchresults"))
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    args = ap.parse_args(argv)
    rows = {name: row for name, row in load(args.bench, args.results).items() if name in GROUPS}
    if args.json:
        print(json.dumps({"groups": rows, "ratios": ratios(rows)}, indent=1))
    else:
        print(table(rows, args.results))
    missing = [name for name in ("scrapy", "mocra") if name not in rows]  # the raw loop is optional (RAW=0)
    if missing:
        print(f"no successful run of: {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
