"""Scaling under CPU caps: the tables of `benchmarks/run_scaling.sh`, written into `benchmarks/README.md`.

    bench_scaling.py summary [--results /tmp/benchresults-scaling]
    bench_scaling.py readme --results DIR --readme benchmarks/README.md --command "..." [--note "..."]

The run records are those of `bench_distributed.py` (one group per row: `redis_2w_c50` = Redis, 2 workers,
each capped at 0.50 CPU; `memory_1w_c40` = the in-memory single process at 0.40 CPU). The figure compared is
pages/s over **wall time including start-up**: from the fork of the first worker (interpreter start,
imports, connecting to the broker) to the end of the last worker's crawl (for scrapy-redis, its last
response: its workers idle 5–10 s before they close). `readme` replaces the text between the markers
`<!-- scaling:begin -->` and `<!-- scaling:end -->` of the section "Scaling under CPU caps" (added at the end
of the file if missing), so the prose around it stays. Stdlib only, like the harness.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from typing import Any

from bench_distributed import CORES, failure, good, load, median

BEGIN, END = "<!-- scaling:begin -->", "<!-- scaling:end -->"
HEADING = "## Scaling under CPU caps"
GROUP = re.compile(r"^(?P<target>memory|redis|nats|scrapy_redis)_(?P<procs>\d+)w_c(?P<cap>\d+)$")
GOALS = {(2, 50): 1.9, (4, 40): 3.6}  # N workers at cap → goal of N-worker / 1-worker pages/s
GOAL_VS_MEMORY = 0.9


def per_page(records: list[dict[str, Any]], key: str) -> float | None:
    """Median CPU ms per page of `key` (cpu_s, servers_cpu_s, nginx_cpu_s) over the records."""
    values = [1000 * (r.get(key) or 0) / r["app"]["pages"] for r in records if r["app"].get("pages")]
    return median(values) if values else None


def app_median(records: list[dict[str, Any]], key: str) -> float | None:
    """Median of one figure of the merged worker records."""
    return median([r["app"][key] for r in records if r["app"].get(key) is not None])


def row(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over the good runs of one group (none: `ok` is 0 and the failures say why)."""
    ok = [r for r in records if good(r)]
    return {
        "runs": len(records),
        "ok": len(ok),
        "failures": [failure(r) for r in records if not good(r)],
        "wall": app_median(ok, "pages_per_s_wall"),
        "crawl": app_median(ok, "pages_per_s_crawl"),
        "startup": app_median(ok, "spawn_to_first_response_s"),
        "seconds": app_median(ok, "spawn_to_end_s"),
        "cpu": per_page(ok, "cpu_s"),
        "servers": per_page(ok, "servers_cpu_s"),
        "nginx": per_page(ok, "nginx_cpu_s"),
        "busy": median([r.get("machine_busy_pct") or 0 for r in ok]) if ok else None,
        "duplicates": median([r["check"]["duplicates"] for r in ok]) if ok else None,
    }


def cap_text(cap: int) -> str:
    """0.50 for 50; `none` for the uncapped rows (0)."""
    return f"{cap / 100:.2f}" if cap else "none"


def fmt(value: float | None, decimals: int = 0, suffix: str = "") -> str:
    """A number for the table, `–` for none."""
    return "–" if value is None else f"{value:,.{decimals}f}{suffix}"


def ratio(a: float | None, b: float | None) -> float | None:
    """a / b, `None` if either is missing."""
    return a / b if a and b else None


def ceiling(one: dict[str, Any], procs: int) -> tuple[float | None, float | None]:
    """(best N-worker / 1-worker ratio the machine allows, CPU the N workers + servers + nginx would need).

    N workers at a cap can do at most N times one worker; together with the broker and nginx they cannot
    use more than the machine's cores: at most CORES / (w + s + n) pages per CPU-second, with w, s, n the
    1-worker run's worker, servers and nginx CPU per page.
    """
    w, s, n, rate = one.get("cpu"), one.get("servers"), one.get("nginx"), one.get("wall")
    if not (w and rate) or s is None or n is None:
        return None, None
    demand = procs * rate * (w + s + n) / 1000  # cores needed if N workers did N× one worker's pages/s
    return min(float(procs), CORES * 1000 / ((w + s + n) * rate)), demand


def parse_groups(rows: dict[str, dict[str, Any]]) -> dict[tuple[str, int, int], dict[str, Any]]:
    """Rows keyed by (target, workers, cap in % of a CPU)."""
    out = {}
    for name, r in rows.items():
        m = GROUP.match(name)
        if m:
            out[(m["target"], int(m["procs"]), int(m["cap"]))] = r
    return out


def run_table(rows: dict[tuple[str, int, int], dict[str, Any]]) -> list[str]:
    """One line per row of the matrix."""
    lines = [
        "| run | workers × CPU cap | good runs | pages/s (wall, start-up included) | pages/s (first→last "
        "response) | fork → first response s | CPU ms/page (workers) | servers · nginx CPU ms/page | "
        "machine busy % | duplicate items | failures |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (target, procs, cap), r in sorted(rows.items(), key=lambda kv: (kv[0][0], -kv[0][2], kv[0][1])):
        lines.append(
            f"| {target} | {procs} × {cap_text(cap)} | {r['ok']}/{r['runs']} | {fmt(r['wall'])} | "
            f"{fmt(r['crawl'])} | {fmt(r['startup'], 1)} | {fmt(r['cpu'], 2)} | "
            f"{fmt(r['servers'], 2)} · {fmt(r['nginx'], 2)} | {fmt(r['busy'])} | {fmt(r['duplicates'])} | "
            f"{'; '.join(r['failures']) or '–'} |"
        )
    return lines


def scaling_table(rows: dict[tuple[str, int, int], dict[str, Any]]) -> list[str]:
    """Per target and cap: N workers / 1 worker (goal, ceiling) and 1 worker / in-memory."""
    lines = [
        "| backend | CPU cap | 1 worker pages/s | N workers pages/s | N / 1 (goal) | ceiling on "
        f"{CORES} cores (CPU needed for N×) | 1 worker / in-memory (goal ≥ {GOAL_VS_MEMORY}) |",
        "|---|---|---|---|---|---|---|",
    ]
    for target in ("redis", "nats", "scrapy_redis"):
        for cap in sorted({c for (t, _, c) in rows if t == target}, reverse=True):
            one = rows.get((target, 1, cap), {})
            memory = rows.get(("memory", 1, cap), {})
            for procs in sorted({p for (t, p, c) in rows if t == target and c == cap and p > 1}):
                many = rows.get((target, procs, cap), {})
                goal = GOALS.get((procs, cap))
                top, demand = ceiling(one, procs)
                lines.append(
                    f"| {target} | {cap_text(cap)} | {fmt(one.get('wall'))} | "
                    f"{procs}: {fmt(many.get('wall'))} | "
                    f"{fmt(ratio(many.get('wall'), one.get('wall')), 2, '×')}"
                    f"{f' (≥ {goal})' if goal and target != 'scrapy_redis' else ''} | "
                    f"{fmt(top, 2, '×')} ({fmt(demand, 2)} cores) | "
                    f"{fmt(ratio(one.get('wall'), memory.get('wall')), 2, '×')} |"
                )
    return lines


def summary_text(results: str) -> str:
    """Both tables of the runs in `results`, markdown."""
    rows = parse_groups({name: row(records) for name, records in load(results).items()})
    if not rows:
        return f"no scaling runs in {results}"
    return "\n".join([*run_table(rows), "", *scaling_table(rows)])


def write_readme(readme: str, results: str, command: str, note: str) -> None:
    """Replace the generated part of the section (adding the section at the end if it is missing)."""
    with open(readme) as f:
        text = f.read()
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    block = "\n".join(
        [
            BEGIN,
            f"Run of {stamp} (`{command}`){f'; {note}' if note else ''}:",
            "",
            summary_text(results),
            END,
        ]
    )
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + f"\n\n{HEADING}\n\n{block}\n"
    tmp = f"{readme}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, readme)
    print(f"wrote the table into {readme}")


def main(argv: list[str] | None = None) -> int:
    """Dispatch the sub-commands."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    s = sub.add_parser("summary", help="print the tables")
    s.add_argument("--results", default=os.environ.get("BENCH_RESULTS", "/tmp/benchresults-scaling"))
    r = sub.add_parser("readme", help="write the tables into benchmarks/README.md")
    r.add_argument("--results", default=os.environ.get("BENCH_RESULTS", "/tmp/benchresults-scaling"))
    r.add_argument("--readme", required=True)
    r.add_argument("--command", required=True, help="the command that produced the runs")
    r.add_argument("--note", default="", help="a line about the run (caps applied or not)")
    args = ap.parse_args(argv)
    if args.command == "summary":
        print(summary_text(args.results))
    else:
        write_readme(args.readme, args.results, args.command, args.note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
