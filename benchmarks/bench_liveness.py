"""Measure what keeping leases alive (`queue.liveness_timeout`) costs one worker on Redis and NATS.

Run: `uv run python benchmarks/bench_liveness.py [PAGES] [ROUNDS]` (defaults 2,000 and 2); needs Redis on
127.0.0.1:6379 (db 15) and NATS with JetStream on 4222 (each job's keys and streams are deleted after it).

One worker crawls a site of PAGES pages (each links to the next ten and answers after 20 ms; the server
runs in a process of its own) over each broker, with three liveness timeouts: 10 s (the default: a Redis
heartbeat every 2 s; NATS renews a lease held 3.3 s), 1 s (a heartbeat every 0.2 s; NATS renews a lease
held 0.33 s, so most of the worker's leases) and 1e6 s, which switches the upkeep off in effect (no
renewal, no heartbeat after the first). Rounds alternate; the table shows medians of pages/s and of the
worker's CPU time per page (rusage), and each as a ratio to the run without upkeep.
"""

from __future__ import annotations

import multiprocessing
import resource
import statistics
import sys
import tempfile
import uuid
from typing import TYPE_CHECKING, Any

import anyio
import nats
import redis

from mocra import Spider
from mocra_core import Mocra
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from mocra_core import CrawlResult

REDIS_URL = "redis://127.0.0.1:6379/15"
NATS_URL = "nats://127.0.0.1:4222"
CONCURRENCY = 16
DELAY = 0.02
LIVENESS = {"off": 1e6, "default 10 s": 10.0, "1 s": 1.0}


def say(line: str) -> None:
    """Print one line of the report."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def serve(pages: int, conn: Connection) -> None:
    """Serve the site until the parent closes `conn` (in a child process)."""

    async def page(request: ServerRequest) -> ServerResponse:
        n = int(request.path.rsplit("/", 1)[1])
        await anyio.sleep(DELAY)
        links = "".join(f'<a href="/p/{k}">{k}</a>' for k in range(10 * n + 1, 10 * n + 11) if k < pages)
        return ServerResponse(body=f"<html><body>{links}</body></html>")

    async def main() -> None:
        server = LocalServer(fallback=page)
        async with server.running() as base_url:
            conn.send(base_url)
            await anyio.to_thread.run_sync(conn.recv_bytes)  # EOF when the parent is done

    try:
        anyio.run(main)
    except EOFError:
        pass


class Pages(Spider[dict[str, Any]]):
    """Follows every link; no items."""

    name = "pages"

    def __init__(self, base_url: str) -> None:
        super().__init__()
        self.start_urls = [base_url + "/p/0"]

    async def parse(self, response: Any, ctx: Any) -> None:
        for href in response.links():
            ctx.follow(href)


async def crawl(base_url: str, broker: str, liveness: float) -> CrawlResult:
    """One crawl of the site by one worker over `broker`, in a job of its own (deleted afterwards)."""
    job = f"bench-live-{uuid.uuid4().hex[:12]}"
    queue = REDIS_URL if broker == "redis" else NATS_URL
    try:
        with tempfile.TemporaryDirectory() as tmp:
            builder = (
                Mocra.builder()
                .spider(Pages(base_url))
                .set(
                    f"queue.url={queue}",
                    f"coordination.url={REDIS_URL if broker == 'redis' else 'lmdb://' + tmp}",
                    f"crawl.job={job}",
                    "crawl.obey_robots=false",
                    f"crawl.concurrency={CONCURRENCY}",
                    f"crawl.per_domain_concurrency={CONCURRENCY}",
                    f"queue.liveness_timeout={liveness}",
                )
            )
            return await builder.run_async()
    finally:
        with redis.Redis.from_url(REDIS_URL) as client:
            if keys := list(client.scan_iter(match=f"mocra-{job}*", count=1000)):
                client.delete(*keys)
        if broker == "nats":
            connection = await nats.connect(NATS_URL)
            for stream in (f"mocra-{job}-work", f"mocra-{job}-dlq"):
                await connection.jetstream().delete_stream(stream)
            await connection.close()


def main() -> None:
    """Alternate crawls with each liveness timeout on each broker; print medians and ratios."""
    pages = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    parent, child = multiprocessing.Pipe()
    server = multiprocessing.Process(target=serve, args=(pages, child), daemon=True)
    server.start()
    base_url = parent.recv()
    rate: dict[tuple[str, str], list[float]] = {}
    cpu: dict[tuple[str, str], list[float]] = {}
    for _ in range(rounds):
        for broker in ("redis", "nats"):
            for name, liveness in LIVENESS.items():
                before = resource.getrusage(resource.RUSAGE_SELF)
                result = anyio.run(crawl, base_url, broker, liveness)
                after = resource.getrusage(resource.RUSAGE_SELF)
                assert result.stats.responses == pages, result
                used = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
                rate.setdefault((broker, name), []).append(result.stats.pages_per_second)
                cpu.setdefault((broker, name), []).append(used / pages * 1e3)
                say(f"  {broker}, liveness {name}: {rate[broker, name][-1]:,.0f} pages/s, "
                    f"{cpu[broker, name][-1]:.2f} CPU ms/page")  # fmt: skip
    parent.close()
    server.join(10)
    say(f"\n{pages:,} pages ({DELAY * 1e3:g} ms each), one worker, concurrency {CONCURRENCY}, "
        f"{rounds} rounds (medians)")  # fmt: skip
    say("| broker | liveness_timeout | pages/s | × off | CPU ms/page | × off |\n|---|---|---|---|---|---|")
    for broker in ("redis", "nats"):
        off_rate, off_cpu = statistics.median(rate[broker, "off"]), statistics.median(cpu[broker, "off"])
        for name in LIVENESS:
            r, c = statistics.median(rate[broker, name]), statistics.median(cpu[broker, name])
            say(f"| {broker} | {name} | {r:,.0f} | {r / off_rate:.2f} | {c:.2f} | {c / off_cpu:.2f} |")


if __name__ == "__main__":
    main()
