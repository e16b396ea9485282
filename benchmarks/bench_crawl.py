"""Summarize the crawl benchmark: mocra against Scrapy, medians over runs, and their ratio.

Run by `benchmarks/run_crawl.sh` after its rounds; on its own:

    python3 benchmarks/bench_crawl.py [--bench ../shared/bench] [--results /tmp/benchresults] [--json]

Stdlib only (it runs under the harness's venv). The figures come from the harness's own `summarize.py
--json` (by path, so its column definitions apply unchanged): pages/s as the crawler reports it (responses /
engine run time), CPU ms/page from the process's rusage, peak RSS. Ratios are mocra / Scrapy: above 1 is
better for pages/s, below 1 is better for CPU and memory.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any

GROUPS = ("scrapy", "mocra")
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
    """A markdown table of both groups and a ratio row."""
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
    if all(name in rows for name in GROUPS):
        ratio = ratios(rows)
        cells = " | ".join(f"**{ratio[key]:.2f}×**" if key in ratio else "" for key, _, _ in COLUMNS)
        lines.append(f"| mocra / scrapy | | | {cells} |")
    return "\n".join(lines)


def ratios(rows: dict[str, Any]) -> dict[str, float]:
    """mocra / Scrapy of the medians of pages/s, CPU ms/page and peak RSS."""
    return {key: rows["mocra"][key][0] / rows["scrapy"][key][0] for key in RATIOS if rows["scrapy"][key][0]}


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
        both = all(name in rows for name in GROUPS)
        print(json.dumps({"groups": rows, "ratio": ratios(rows) if both else None}, indent=1))
    else:
        print(table(rows, args.results))
    missing = [name for name in GROUPS if name not in rows]
    if missing:
        print(f"no successful run of: {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
