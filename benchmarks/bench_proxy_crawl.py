"""The bench crawl direct vs through a pool of 4 local forward proxies, in interleaved rounds.

Run (nginx of `../shared/bench` must be up: `../shared/bench/setup.sh`, see `benchmarks/README.md`):

    uv run python benchmarks/bench_proxy_crawl.py [--rounds 3] [--pages N] [--proxies 4] [--policy score]

Each round crawls the shared synthetic shop twice with `benchmarks/mocra_bench_spider.py`, the order
alternating between rounds:

- `direct`: no proxy;
- `pool`: `[proxy.pool]` with one `static` source per proxy, each a `mocra_proxy.testing.ForwardProxy`
  on 127.0.0.1 in a process of its own (started fresh for the round, stopped after it).

The crawler is a child process (`os.wait4` gives its CPU); each proxy reports the CPU it spent between
listening and being stopped, and how many requests it carried (with their `time.monotonic()` span); nginx's
CPU is read from `/proc`. Every crawl is checked: every item equal to the site's ground truth, none twice,
`items == pages - listing pages`, all 20,000 items for a full crawl, and in `pool` rounds the proxies must
have carried exactly the crawl's responses (the share of each is printed). `--pages N` stops a crawl after
N downloads (`crawl.max_pages`); the default is the full crawl (21,000 pages).

Internal: `--serve-proxy` runs one proxy (what the pool rounds start), printing its port, then on a line
on stdin (or its end) a JSON report.
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
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
SPIDER = HERE / "mocra_bench_spider.py"
TRUTH = Path("/tmp/benchsite/_meta/truth.jsonl")
NGINX_PID = Path("/tmp/benchnginx/nginx.pid")
FULL_ITEMS = 20_000


def say(line: str = "") -> None:
    """Print one line of the report."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


# --- one proxy, in its own process ----------------------------------------------------------------------


def _cpu_self() -> float:
    """CPU seconds (user + system) of this process so far."""
    t = os.times()
    return t.user + t.system


async def _serve_proxy() -> None:
    """Run a `ForwardProxy` until a line (or EOF) on stdin; print its port, then its report as JSON."""
    import anyio
    import anyio.to_thread

    from mocra_proxy.testing import ForwardProxy

    proxy = ForwardProxy()
    async with proxy.running():
        say(str(proxy.port))
        cpu0 = _cpu_self()
        await anyio.to_thread.run_sync(sys.stdin.readline)
        cpu = _cpu_self() - cpu0
    at = [s.at for s in proxy.seen]
    report = {
        "port": proxy.port,
        "requests": len(proxy.seen),
        "statuses": dict(Counter(str(s.status) for s in proxy.seen)),
        "first_at": min(at, default=None),
        "last_at": max(at, default=None),
        "cpu_s": cpu,
    }
    say(json.dumps(report))


class ProxyProcs:
    """`count` proxy processes, started on entry; `stop()` ends them and returns their reports."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.procs: list[subprocess.Popen[str]] = []
        self.ports: list[int] = []

    def __enter__(self) -> ProxyProcs:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--serve-proxy"]
        for _ in range(self.count):
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            self.procs.append(proc)
        for proc in self.procs:
            assert proc.stdout is not None
            self.ports.append(int(proc.stdout.readline()))
        return self

    @property
    def urls(self) -> list[str]:
        """The proxies' URLs."""
        return [f"http://127.0.0.1:{port}" for port in self.ports]

    def stop(self) -> list[dict[str, Any]]:
        """Stop every proxy; their reports, in port order."""
        reports = []
        for proc in self.procs:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write("stop\n")
            proc.stdin.flush()
        for proc in self.procs:
            assert proc.stdout is not None
            reports.append(json.loads(proc.stdout.readline()))
            proc.wait(timeout=30)
        self.procs.clear()
        return reports

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:  # only if stop() was not reached
            proc.kill()
            proc.wait()


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


def nginx_cpu() -> float | None:
    """CPU seconds of the nginx master and its workers, or None without nginx."""
    try:
        pid = int(NGINX_PID.read_text().strip())
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except (OSError, ValueError):
        return None
    total = 0.0
    for p in [pid, *map(int, children)]:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


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
    """Problems with what the proxies carried: not every response, anything but 200, or a skewed share."""
    total = sum(r["requests"] for r in reports)
    ok = sum(r["statuses"].get("200", 0) for r in reports)
    problems = []
    if total != app["pages"] or ok != total:
        problems.append(f"proxies carried {total} requests ({ok} answered 200) for {app['pages']} pages")
    for r in reports:
        if total and abs(r["requests"] / total - 1 / len(reports)) > 0.05:
            problems.append(f"proxy :{r['port']} carried {r['requests'] / total:.1%} of the requests")
    return problems


def crawl(
    variant: str, args: argparse.Namespace, workdir: Path, truth: dict[str, Any], log: IO[bytes]
) -> Crawl:
    """One crawl of `variant` (`direct` or `pool`), checked."""
    settings = [f"crawl.max_pages={args.pages}"] if args.pages else []
    log.write(f"\n===== {variant} {time.strftime('%H:%M:%S')}\n".encode())
    log.flush()
    reports: list[dict[str, Any]] = []
    if variant == "pool":
        with ProxyProcs(args.proxies) as procs:
            nginx0 = nginx_cpu()
            app, cpu = run_spider(workdir, settings + pool_settings(procs.urls, args.policy), args.base, log)
            nginx1 = nginx_cpu()
            reports = procs.stop()
    else:
        nginx0 = nginx_cpu()
        app, cpu = run_spider(workdir, settings, args.base, log)
        nginx1 = nginx_cpu()
    problems = check_items(workdir / "items.jsonl", app, truth, full=not args.pages)
    if reports:
        problems += check_proxies(reports, app)
    nginx = None if nginx0 is None or nginx1 is None else nginx1 - nginx0
    return Crawl(variant, app["pages"], app["items"], app["elapsed_s"], cpu, nginx, reports, problems)


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
        f"  {c.variant:<6} {c.pages:>6} pages {c.items:>6} items {c.pages_per_s:8.1f} pages/s "
        f"crawler {c.per_page_ms(c.cpu_s):.3f} CPU ms/page"
    )
    if c.proxies:
        shares = " ".join(f"{p['requests']}" for p in c.proxies)
        line += f", proxies {c.per_page_ms(c.proxies_cpu_s):.3f} CPU ms/page (requests each: {shares})"
    if c.nginx_cpu_s is not None:
        line += f", nginx {c.per_page_ms(c.nginx_cpu_s):.3f}"
    return line + ("  ** " + "; ".join(c.problems) if c.problems else "  ok")


def table(crawls: list[Crawl]) -> list[str]:
    """The summary table (markdown), medians (min–max) over the rounds."""
    lines = [
        "| variant | pages/s | crawler CPU ms/page | proxies CPU ms/page | nginx CPU ms/page | checks |",
        "|---|---|---|---|---|---|",
    ]
    rates: dict[str, float] = {}
    for variant in ("direct", "pool"):
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
    if len(rates) == 2:
        lines.append(f"\npool / direct pages/s (medians): {rates['pool'] / rates['direct']:.2f}×")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Interleaved rounds of direct and pool crawls; a table of medians; exit 1 if any check failed."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pages", type=int, default=0, help="stop each crawl after N pages (0: the full crawl)")
    ap.add_argument("--proxies", type=int, default=4, help="proxy processes in the pool")
    ap.add_argument("--policy", default="score", choices=("score", "round_robin", "random"))
    ap.add_argument("--base", default="http://127.0.0.1:8731", help="the bench site")
    ap.add_argument("--json", help="write every crawl's figures to this file")
    ap.add_argument("--serve-proxy", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.serve_proxy:
        import anyio

        anyio.run(_serve_proxy)
        return 0
    if nginx_cpu() is None or not TRUTH.exists():
        raise SystemExit("the bench site is not up: run ../shared/bench/setup.sh (or nginx_ctl.sh start)")
    truth = {d["url"]: d for d in map(json.loads, TRUTH.read_text().splitlines())}
    crawls: list[Crawl] = []
    with tempfile.TemporaryDirectory(prefix="bench_proxy_crawl_") as tmp:
        workdir = Path(tmp)
        log_path = Path(tempfile.gettempdir()) / "bench_proxy_crawl.log"
        say(
            f"bench crawl direct vs {args.proxies} ForwardProxy processes ({args.policy} policy), "
            f"{args.rounds} rounds, {args.pages or 'all'} pages, Python {sys.version.split()[0]}, "
            f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; crawler logs in {log_path}"
        )
        with log_path.open("wb") as log:
            for i in range(args.rounds):
                order = ("direct", "pool") if i % 2 == 0 else ("pool", "direct")
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
