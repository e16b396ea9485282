"""scrapy-redis side of the distributed benchmark: the shared harness's `scrapy_bench.py` crawl, with the
scheduler queue and the RFPDupeFilter in Redis, so that several processes share one crawl.

Run in the harness's venv (`/tmp/benchvenv/bin/pip install scrapy-redis`; not a dependency of mocra), one
command per worker, after pushing the start URL once (`benchmarks/run_distributed.sh` does all of it):

    redis-cli -n 14 rpush srbench:start_urls '{"url": "http://127.0.0.1:8731/list/1.html"}'
    scrapy runspider benchmarks/scrapy_redis_bench.py -O /tmp/benchout/sr-0.jsonl [-a base=URL]

Same crawl and settings as the harness's spider (64 requests in flight, 64 per domain, retries, cookies
and robots.txt off), plus scrapy-redis's scheduler (`PriorityQueue` in a sorted set), its `RFPDupeFilter`
(one `SADD` per request) and `SCHEDULER_PERSIST` (otherwise the first worker to stop would flush the
queue and the fingerprints under the others). Keys live in Redis db 14 under `srbench:`; the caller
deletes them.

scrapy-redis workers never stop on their own when the queue is empty: a worker that has had nothing to do
for `MAX_IDLE_TIME_BEFORE_CLOSE` (5 s) closes (scrapy-redis checks on Scrapy's idle signal, every ~5 s, so a
worker closes 5–10 s after its last response). `SCHEDULER_IDLE_BEFORE_CLOSE` stays 0: with the default
`PriorityQueue` it is ignored, and with the FIFO/LIFO queues a blocking pop would stall Twisted's reactor.
So the run time includes that idle tail; compare the crawling span (first → last response) instead, which
the stats file gives on the machine-wide `time.monotonic()` clock (`t_first_response`, `t_last_response`).

The stats file (`-a stats_out=F` or `$BENCH_APP_STATS`) has `pages`, `items`, `elapsed_s`
(spider open → close), `pages_per_s`, `t_first_response`, `t_last_response`, `t_listing` (the times of
the listing pages).
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING, Any

import scrapy
from scrapy import signals
from scrapy_redis.spiders import RedisSpider

if TYPE_CHECKING:
    from collections.abc import Iterator

    from scrapy.http import Response

KEY = "srbench"


class BenchSpider(RedisSpider):  # type: ignore[misc]
    """The benchmark crawl: listing pages → item pages → related item pages."""

    name = "bench"
    redis_key = f"{KEY}:start_urls"
    custom_settings = {  # Scrapy's API
        "CONCURRENT_REQUESTS": 64,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 64,
        "RETRY_ENABLED": False,
        "ROBOTSTXT_OBEY": False,
        "COOKIES_ENABLED": False,
        "LOG_LEVEL": "INFO",
        "REMOTE_CONTROL_JOBS_DIR": "/tmp/benchout/scrapy_jobs",
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
        "SCHEDULER_PERSIST": True,
        "SCHEDULER_QUEUE_KEY": f"{KEY}:requests",
        "SCHEDULER_DUPEFILTER_KEY": f"{KEY}:dupefilter",
        "REDIS_URL": "redis://127.0.0.1:6379/14",
        "MAX_IDLE_TIME_BEFORE_CLOSE": 5,
        "SCHEDULER_IDLE_BEFORE_CLOSE": 0,
    }

    def __init__(self, base: str = "http://127.0.0.1:8731", stats_out: str | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.base = base.rstrip("/")
        self.stats_out = stats_out or os.environ.get("BENCH_APP_STATS")
        self._t: list[float] = []  # monotonic time of every callback (one per response)
        self._listing: list[float] = []  # ... of the listing pages: the crawl's serial chain

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> BenchSpider:
        """Hook the stats writer to `engine_stopped`."""
        spider: BenchSpider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider._engine_stopped, signal=signals.engine_stopped)
        return spider

    def parse(self, response: Response) -> Iterator[scrapy.Request]:
        """A listing page: follow its items and the next page."""
        self._t.append(time.monotonic())
        self._listing.append(self._t[-1])
        for href in response.css("a.item::attr(href)").getall():
            yield response.follow(href, callback=self.parse_item)
        nxt = response.css("a.next::attr(href)").get()
        if nxt:
            yield response.follow(nxt, callback=self.parse)

    def parse_item(self, response: Response) -> Iterator[Any]:
        """An item page: emit the item, follow the related items."""
        self._t.append(time.monotonic())
        yield {
            "url": response.url[len(self.base) :],
            "title": response.css("h1.title::text").get(),
            "price": response.css("p.price::text").get(),
            "tags": response.css("ul.tags li::text").getall(),
        }
        for href in response.css("div.related a::attr(href)").getall():
            yield response.follow(href, callback=self.parse_item)

    def _engine_stopped(self) -> None:
        if not self.stats_out:
            return
        st = self.crawler.stats.get_stats()
        pages = st.get("response_received_count", len(self._t))
        elapsed = st.get("elapsed_time_seconds")
        if elapsed is None and "finish_time" in st and "start_time" in st:
            elapsed = (st["finish_time"] - st["start_time"]).total_seconds()
        res: dict[str, Any] = {
            "tool": "scrapy-redis",
            "pages": pages,
            "items": st.get("item_scraped_count", 0),
            "elapsed_s": elapsed,
            "pages_per_s": pages / elapsed if elapsed else None,
            "dupefilter_filtered": st.get("dupefilter/filtered", 0),
            "finish_reason": st.get("finish_reason"),
        }
        if self._t:
            res["t_first_response"], res["t_last_response"] = self._t[0], self._t[-1]
            res["t_listing"] = self._listing
        with open(self.stats_out, "w") as f:
            json.dump(res, f, indent=1, sort_keys=True)
