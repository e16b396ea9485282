"""mocra's side of the crawl benchmark: the same crawl as the shared harness's `scrapy_bench.py`.

Run (nginx of `../shared/bench` must be up, see `benchmarks/README.md`):

    uv run python benchmarks/mocra_bench_spider.py --out /tmp/benchout/mocra.jsonl [--base URL]

As one worker of a distributed crawl (every worker gets the same `--queue` and `--job`; see
`benchmarks/run_distributed.sh`):

    uv run python benchmarks/mocra_bench_spider.py --out /tmp/benchout/w0.jsonl \
        --queue nats://127.0.0.1:4222 --job bench-1 --coordination redis://127.0.0.1:6379/13

Starts at `/list/1.html`, follows the `a.next` pagination and every `a.item` link, and on each item page
emits `{url (path only), title, price, tags}` and follows the 3 `div.related a` links (mostly duplicates,
dropped by the engine's dedup). One process, a `JsonlSink`, 64 requests in flight (64 per domain),
robots.txt off, retries on (the default policy).

When `$BENCH_APP_STATS` (set by the harness's `measure.py`) or `--stats` names a file, writes there the
JSON `measure.py` merges into its run record: `pages` (responses), `items`, `elapsed_s` (the engine's
run time, engine start → sinks closed: like Scrapy's start_time → finish_time it excludes interpreter start
and imports and includes ramp-up and drain), `pages_per_s`, and the 10th→90th percentile response rate;
for merging the records of several workers, `t_start`/`t_end` (that run time) and `t_first_response`/
`t_last_response` on the machine-wide `time.monotonic()` clock, and `t_listing`, the times of the listing
pages (1,000 pages each found on the one before: the crawl's critical path).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from mocra import Ctx, JsonlSink, Mocra, Response, Seeds, Spider

Item = dict[str, Any]


class BenchSpider(Spider[Item]):
    """The benchmark crawl: listing pages → item pages → related item pages."""

    name = "bench"

    def __init__(self, base: str) -> None:
        self.base = base.rstrip("/")
        self.times: list[float] = []  # monotonic time of every callback (one per response)
        self.listing_times: list[float] = []  # ... of the listing pages: the crawl's serial chain

    async def start(self, seeds: Seeds) -> None:
        """Seed the first listing page."""
        seeds.get(self.base + "/list/1.html")

    async def parse(self, response: Response, ctx: Ctx[Item]) -> None:
        """A listing page: follow its items and the next page."""
        self.times.append(time.monotonic())
        self.listing_times.append(self.times[-1])
        for url in response.links("a.item"):
            ctx.follow(url, callback=self.parse_item)
        for url in response.links("a.next"):
            ctx.follow(url, priority=1)  # the listing chain is the crawl's critical path: keep it moving

    async def parse_item(self, response: Response, ctx: Ctx[Item]) -> None:
        """An item page: emit the item, follow the related items."""
        self.times.append(time.monotonic())
        title = response.css_first("h1.title")
        price = response.css_first("p.price")
        ctx.emit(
            {
                "url": response.url[len(self.base) :],
                "title": title.text() if title is not None else None,
                "price": price.text() if price is not None else None,
                "tags": [li.text() for li in response.css("ul.tags li")],
            }
        )
        for url in response.links("div.related a"):
            ctx.follow(url, callback=self.parse_item)


def main(argv: list[str] | None = None) -> int:
    """Run the crawl, print the stats, write the app stats for `measure.py`."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="JSONL file for the items")
    ap.add_argument("--base", default="http://127.0.0.1:8731", help="the bench site")
    ap.add_argument("--stats", default=os.environ.get("BENCH_APP_STATS"), help="app stats JSON file")
    ap.add_argument("-s", "--set", action="append", default=[], help="extra setting: crawl.concurrency=8")
    ap.add_argument("--queue", help="shared queue URL (redis://…, nats://…, kafka://…); default: in memory")
    ap.add_argument("--job", help="job name shared by the workers of one crawl")
    ap.add_argument("--coordination", help="coordination store URL, e.g. redis://127.0.0.1:6379/13")
    ap.add_argument("--api", metavar="HOST:PORT", help="serve the admin API during the crawl")
    args = ap.parse_args(argv)
    shared = [
        f"{key}={value}"
        for key, value in (
            ("queue.url", args.queue),
            ("crawl.job", args.job),
            ("coordination.url", args.coordination),
        )
        if value
    ]

    spider = BenchSpider(args.base)
    builder = (
        Mocra.builder()
        .spider(spider, JsonlSink(args.out))
        .set(
            "crawl.obey_robots=false",
            "crawl.concurrency=64",
            "crawl.per_domain_concurrency=64",
            *shared,
            *args.set,
        )
    )
    if args.api:
        builder.api(args.api)
    result = builder.run()
    t_end = time.monotonic()
    stats = result.stats
    elapsed = stats.elapsed
    app: dict[str, Any] = {
        "tool": "mocra",
        "reason": result.reason,
        "dead_letters": result.dead_letters,
        "mocra_stats": stats.to_dict(),
        "pages": stats.responses,
        "items": stats.items,
        "elapsed_s": elapsed,
        "pages_per_s": stats.responses / elapsed if elapsed else None,
        "items_per_s": stats.items / elapsed if elapsed else None,
        "t_start": t_end - elapsed,
        "t_end": t_end,
    }
    t = spider.times
    if t:
        app["t_first_response"], app["t_last_response"] = t[0], t[-1]
        app["t_listing"] = spider.listing_times
    if len(t) >= 20:
        lo, hi = int(len(t) * 0.10), int(len(t) * 0.90)
        app["pages_per_s_p10_p90"] = (hi - lo) / (t[hi] - t[lo])
        app["first_to_last_response_s"] = t[-1] - t[0]
    brief = {k: v for k, v in app.items() if k not in ("mocra_stats", "t_listing")}
    print(json.dumps(brief), file=sys.stderr)
    print(json.dumps(app["mocra_stats"]), file=sys.stderr)
    if args.stats:
        with open(args.stats, "w") as f:
            json.dump(app, f, indent=1, sort_keys=True)
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
