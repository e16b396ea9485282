"""The bench crawl direct vs through a pool of 4 local forward proxies, in interleaved rounds.

Run (nginx of `../shared/bench` must be up: `../shared/bench/setup.sh`, see `benchmarks/README.md`):

    uv run python benchmarks/bench_proxy_crawl.py [--rounds 3] [--pages N] [--proxies 4] [--policy score] \
        [--variants direct,pool,pool-proxypy]

Each round crawls the shared synthetic shop once per variant with `benchmarks/mocra_bench_spider.py`,
the order rotating between rounds:

- `direct`: no proxy;
- `pool`: `[proxy.pool]` with one `static` source per proxy, each a `mocra_proxy.testing.ForwardProxy`
  on 127.0.0.1 in a process of its own (started fresh for the crawl, stopped after it);
- `pool-proxypy`: the same pool of proxy.py processes (a benchmark-only install, see `proxy_procs.py`).

The crawler is a child process (`os.wait4` gives its CPU, interpreter start and imports included, as
`measure.py`'s: ~0.8 s); the proxies' CPU (their process trees, from just before the crawl to just after
it) and nginx's are read from `/proc`, and so is what else kept the machine busy meanwhile ("others", in
cores, softirq included). Every crawl is checked: every item equal to the site's ground truth, none twice,
`items == pages - listing pages`, all 20,000 items for a full crawl; through proxies, each must have
carried its share (±5 points of 1/N of the requests, as the proxies count them), all of them must add up
to the crawl's pages, and ForwardProxy's answers must all be 200. `--pages N` stops a crawl after N
downloads (`crawl.max_pages`); the default is the full crawl (21,000 pages). Exit 1 if a check failed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from proxy_procs import ForwardProxies, ProxyPyProxies, busy_s, nginx_cpu

HERE = Path(__file__).resolve().parent
SPIDER = HERE / "mocra_bench_spider.py"
TRUTH = Path("/tmp/benchsite/_meta/truth.jsonl")
FULL_ITEMS = 20_000


def say(line: str = "") -> None:
    """Print one line of the report."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


# --- one crawl ------------------------------------------------------------------------------------------


@dataclass
class Crawl:
    """What one crawl measured."""

    variant: str
    pages: int
    items: int
    elapsed_s: float
    cpu_s: float
    nginx_cpu_s: float | None
    others_cores: float
    proxies: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def pages_per_s(self) -> float:
        """The crawler's own rate (engine start → sinks closed)."""
        return self.pages / self.elapsed_s

    def per_page_ms(self, cpu_s: float | None) -> float | None:
        """`cpu_s` in ms per page."""
        return None if cpu_s is None else 1000 * cpu_s / self.pages

    @property
    def proxies_cpu_s(self) -> float | None:
        """CPU of all proxies together (None in a direct crawl)."""
        return sum(p["cpu_s"] for p in self.proxies) if self.proxies else None


def pool_settings(urls: list[str], policy: str) -> list[str]:
    """`-s` overrides for a `[proxy.pool]` of one static source per proxy URL."""
    sources = ", ".join(f'{{type = "static", name = "p{i}", urls = ["{url}"]}}' for i, url in enumerate(urls))
    return [f"proxy.pool.sources=[{sources}]", f'proxy.pool.policy={{name = "{policy}"}}']


def run_spider(workdir: Path, settings: list[str], base: str, log: IO[bytes]) -> tuple[dict[str, Any], float]:
    """Run the bench spider once; its app stats and its CPU seconds (user + system, from `os.wait4`)."""
    out, stats = workdir / "items.jsonl", workdir / "stats.json"
    out.unlink(missing_ok=True)
    stats.unlink(missing_ok=True)
    cmd = [sys.executable, str(SPIDER), "--out", str(out), "--stats", str(stats), "--base", base]
    for setting in settings:
        cmd += ["-s", setting]
    proc = subprocess.Popen(cmd, cwd=workdir, stdout=log, stderr=subprocess.STDOUT)
    _, status, usage = os.wait4(proc.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    app: dict[str, Any] = json.loads(stats.read_text()) if stats.exists() else {}
    # a crawl cut by crawl.max_pages exits 1 (the run is not "ok"), which is what --pages asks for
    if app.get("reason") not in ("finished", "max_pages") or app.get("dead_letters"):
        raise SystemExit(f"the crawl failed (exit {code}, {app.get('reason')}); see {log.name}")
    return app, usage.ru_utime + usage.ru_stime


def check_items(path: Path, app: dict[str, Any], truth: dict[str, Any], full: bool) -> list[str]:
    """Problems with a crawl's items: wrong, duplicated, missing, or not one per item page."""
    seen: set[str] = set()
    wrong = dup = 0
    with path.open() as f:
        for line in f:
            item = json.loads(line)
            if item["url"] in seen:
                dup += 1
            seen.add(item["url"])
            want = truth.get(item["url"])
            if want is None or [item["title"], item["price"], item["tags"]] != [
                want["title"],
                want["price"],
                want["tags"],
            ]:
                wrong += 1
    problems = [f"{n} {what}" for n, what in ((wrong, "wrong items"), (dup, "duplicate items")) if n]
    expected = app["pages"] - len(app.get("t_listing", []))
    if len(seen) != expected or app["items"] != len(seen):
        problems.append(f"{len(seen)} items written, {app['items']} counted, {expected} item pages")
    if full and len(seen) != FULL_ITEMS:
        problems.append(f"{FULL_ITEMS - len(seen)} items missing")
    return problems


def check_proxies(reports: list[dict[str, Any]], app: dict[str, Any]) -> list[str]:
    """Problems with what the proxies carried: not every page, a skewed share, anything but 200."""
    problems = []
    total = sum(r["requests"] for r in reports)
    if total != app["pages"]:
        problems.append(f"the proxies carried {total} requests for {app['pages']} pages")
    for r in reports:
        if not total or abs(r["requests"] / total - 1 / len(reports)) > 0.05:
            problems.append(f"proxy :{r['port']} carried {r['requests'] / max(total, 1):.1%} of the requests")
    if "statuses" in reports[0] and (ok := sum(r["statuses"].get("200", 0) for r in reports)) != total:
        problems.append(f"{total - ok} requests not answered 200 by a proxy")
    return problems


def crawl(
    variant: str, args: argparse.Namespace, workdir: Path, truth: dict[str, Any], log: IO[bytes]
) -> Crawl:
    """One crawl of `variant`, checked."""
    settings = [f"crawl.max_pages={args.pages}"] if args.pages else []
    log.write(f"\n===== {variant} {time.strftime('%H:%M:%S')}\n".encode())
    log.flush()
    reports: list[dict[str, Any]] = []
    if variant != "direct":
        kind = ForwardProxies if variant == "pool" else ProxyPyProxies
        with kind(args.proxies) as procs:
            procs.begin()
            nginx0, busy0 = nginx_cpu(), busy_s()
            app, cpu = run_spider(workdir, settings + pool_settings(procs.urls, args.policy), args.base, log)
            nginx1, busy1 = nginx_cpu(), busy_s()
            reports = procs.stop()
    else:
        nginx0, busy0 = nginx_cpu(), busy_s()
        app, cpu = run_spider(workdir, settings, args.base, log)
        nginx1, busy1 = nginx_cpu(), busy_s()
    problems = check_items(workdir / "items.jsonl", app, truth, full=not args.pages)
    if reports:
        problems += check_proxies(reports, app)
    nginx = None if nginx0 is None or nginx1 is None else nginx1 - nginx0
    ours = cpu + sum(r["cpu_s"] for r in reports) + (nginx or 0.0)
    others = (busy1[0] - busy0[0] - ours) / (busy1[1] - busy0[1])  # cores, softirq included
    return Crawl(variant, app["pages"], app["items"], app["elapsed_s"], cpu, nginx, others, reports, problems)


# --- report ---------------------------------------------------------------------------------------------


def med(values: list[float]) -> str:
    """`median (min–max)` of `values`, or `–`."""
    if not values:
        return "–"
    digits = 0 if min(values) >= 100 else 2
    m, lo, hi = statistics.median(values), min(values), max(values)
    return f"{m:,.{digits}f} ({lo:,.{digits}f}–{hi:,.{digits}f})"


def describe(c: Crawl) -> str:
    """One line about one crawl."""
    line = (
        f"  {c.variant:<12} {c.pages:>6} pages {c.items:>6} items {c.pages_per_s:8.1f} pages/s "
        f"crawler {c.per_page_ms(c.cpu_s):.3f} CPU ms/page"
    )
    if c.proxies:
        each = " ".join(str(p["requests"]) for p in c.proxies)
        line += f", proxies {c.per_page_ms(c.proxies_cpu_s):.3f} CPU ms/page (requests each: {each})"
    if c.nginx_cpu_s is not None:
        line += f", nginx {c.per_page_ms(c.nginx_cpu_s):.3f}"
    line += f"; others {c.others_cores:.2f} cores"
    return line + ("  ** " + "; ".join(c.problems) if c.problems else "  ok")


def table(crawls: list[Crawl]) -> list[str]:
    """The summary table (markdown), medians (min–max) over the rounds."""
    lines = [
        "| variant | pages/s | crawler CPU ms/page | proxies CPU ms/page | nginx CPU ms/page | checks |",
        "|---|---|---|---|---|---|",
    ]
    rates: dict[str, float] = {}
    for variant in dict.fromkeys(c.variant for c in crawls):
        mine = [c for c in crawls if c.variant == variant]
        if not mine:
            continue
        rates[variant] = statistics.median(c.pages_per_s for c in mine)
        proxies = [v for c in mine if (v := c.per_page_ms(c.proxies_cpu_s)) is not None]
        nginx = [v for c in mine if (v := c.per_page_ms(c.nginx_cpu_s)) is not None]
        bad = sum(1 for c in mine if c.problems)
        lines.append(
            f"| {variant} | {med([c.pages_per_s for c in mine])} | "
            f"{med([c.per_page_ms(c.cpu_s) or 0.0 for c in mine])} | {med(proxies)} | {med(nginx)} | "
            f"{len(mine) - bad}/{len(mine)} ok |"
        )
    ratios = [f"{v} / direct {rate / rates['direct']:.2f}×" for v, rate in rates.items() if v != "direct"]
    if ratios and "direct" in rates:
        lines += ["", "pages/s, ratio of the medians: " + ", ".join(ratios)]
    return lines


def main(argv: list[str] | None = None) -> int:
    """Interleaved rounds of direct and pool crawls; a table of medians; exit 1 if any check failed."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pages", type=int, default=0, help="stop each crawl after N pages (0: the full crawl)")
    ap.add_argument("--proxies", type=int, default=4, help="proxy processes in the pool")
    ap.add_argument("--policy", default="score", choices=("score", "round_robin", "random"))
    ap.add_argument("--base", default="http://127.0.0.1:8731", help="the bench site")
    ap.add_argument("--variants", default="direct,pool", help="direct, pool (ForwardProxy), pool-proxypy")
    ap.add_argument("--json", help="write every crawl's figures to this file")
    args = ap.parse_args(argv)
    variants = args.variants.split(",")
    if unknown := set(variants) - {"direct", "pool", "pool-proxypy"}:
        raise SystemExit(f"unknown variants: {', '.join(sorted(unknown))}")
    if nginx_cpu() is None or not TRUTH.exists():
        raise SystemExit("the bench site is not up: run ../shared/bench/setup.sh (or nginx_ctl.sh start)")
    truth = {d["url"]: d for d in map(json.loads, TRUTH.read_text().splitlines())}
    crawls: list[Crawl] = []
    with tempfile.TemporaryDirectory(prefix="bench_proxy_crawl_") as tmp:
        workdir = Path(tmp)
        log_path = Path(tempfile.gettempdir()) / "bench_proxy_crawl.log"
        say(
            f"bench crawl: {', '.join(variants)}; {args.proxies} proxy processes ({args.policy} policy), "
            f"{args.rounds} rounds, {args.pages or 'all'} pages, Python {sys.version.split()[0]}, "
            f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; crawler logs in {log_path}"
        )
        with log_path.open("wb") as log:
            for i in range(args.rounds):
                order = variants[i % len(variants) :] + variants[: i % len(variants)]
                say(f"round {i + 1}:")
                for variant in order:
                    crawls.append(crawl(variant, args, workdir, truth, log))
                    say(describe(crawls[-1]))
    say()
    for line in table(crawls):
        say(line)
    if args.json:
        Path(args.json).write_text(json.dumps([c.__dict__ for c in crawls], indent=1))
    return 1 if any(c.problems for c in crawls) else 0


if __name__ == "__main__":
    sys.exit(main())
