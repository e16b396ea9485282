"""Measure what the job-wide politeness gate costs one worker: per slot, and per page over Redis.

Run: `uv run python benchmarks/bench_gate.py [PAGES] [ROUNDS]` (defaults 3,000 and 3); needs Redis on
127.0.0.1:6379 (db 15; the job's keys are deleted after each run).

First the cost of a slot (enter + exit, no download) of a bare `DomainLimiter` and of a `GatedLimiter`
on each gate, 16 tasks on one domain. Then one worker crawls a site of PAGES pages on one host (each
page links to the next ten; the server runs in a process of its own) with `queue.url=redis://…`, so the
engine puts a `RedisDomainGate` in front of its `DomainLimiter`: one Lua script per request start and one
`ZREM` per end. The other runs are the same crawl with the gate switched off (`open_gate` patched to
return None), all else equal (queues, seen set and coordination stay on Redis). Rounds alternate; the
table shows the medians of pages/s and of the worker's CPU time per page (rusage), which a loaded machine
disturbs less than pages/s. `crawl.per_domain_concurrency` equals the worker's concurrency (16), so no
request waits for a slot: what is measured is the gate's own cost.
"""

from __future__ import annotations

import multiprocessing
import resource
import statistics
import sys
import tempfile
import time
import uuid
from typing import TYPE_CHECKING, Any

import anyio
import redis

import mocra_core.engine._engine as engine_module
from mocra import Spider
from mocra_core import Mocra
from mocra_core.download import DomainLimiter, GatedLimiter, LmdbDomainGate, RedisDomainGate
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from mocra_core import CrawlResult

REDIS_URL = "redis://127.0.0.1:6379/15"
CONCURRENCY = 16


def say(line: str) -> None:
    """Print one line of the report."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def serve(pages: int, conn: Connection) -> None:
    """Serve the site until the parent closes `conn` (in a child process)."""

    async def page(request: ServerRequest) -> ServerResponse:
        n = int(request.path.rsplit("/", 1)[1])
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


async def crawl(base_url: str, *, gated: bool) -> CrawlResult:
    """One crawl of the site by one worker over Redis, in a job of its own."""
    job = f"bench-gate-{uuid.uuid4().hex[:12]}"
    original = engine_module.open_gate
    if not gated:
        engine_module.open_gate = lambda *args, **kwargs: None  # type: ignore[assignment]
    try:
        builder = (
            Mocra.builder()
            .spider(Pages(base_url))
            .set(
                f"queue.url={REDIS_URL}",
                f"crawl.job={job}",
                "crawl.obey_robots=false",
                f"crawl.concurrency={CONCURRENCY}",
                f"crawl.per_domain_concurrency={CONCURRENCY}",
            )
        )
        return await builder.run_async()
    finally:
        engine_module.open_gate = original
        with redis.Redis.from_url(REDIS_URL) as client:
            if keys := list(client.scan_iter(match=f"mocra-{job}*", count=1000)):
                client.delete(*keys)


async def slot_cost(make: str, slots: int) -> float:
    """Microseconds per `slot()` enter + exit, 16 tasks at once on one domain, without any download."""
    local = DomainLimiter(concurrency=CONCURRENCY)
    namespace = f"bench-gate-{uuid.uuid4().hex[:12]}"
    with tempfile.TemporaryDirectory() as tmp:
        if make == "DomainLimiter":
            limiter: DomainLimiter | GatedLimiter = local
            return await _cycle(limiter, slots)
        gate = (
            RedisDomainGate(REDIS_URL, namespace=namespace)
            if make == "RedisDomainGate"
            else LmdbDomainGate(tmp)
        )
        async with gate, GatedLimiter(local, gate) as gated:
            return await _cycle(gated, slots)


async def _cycle(limiter: DomainLimiter | GatedLimiter, slots: int) -> float:
    async def worker() -> None:
        for _ in range(slots // CONCURRENCY):
            async with limiter.slot("example.com"):
                pass

    began = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(CONCURRENCY):
            tg.start_soon(worker)
    return (time.perf_counter() - began) / slots * 1e6


def main() -> None:
    """Alternate crawls with and without the gate; print medians and the gate's cost per request."""
    pages = int(sys.argv[1]) if len(sys.argv) > 1 else 3_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    say(f"slot enter + exit, {CONCURRENCY} tasks on one domain (median of {rounds}):")
    for make in ("DomainLimiter", "LmdbDomainGate", "RedisDomainGate"):
        cost = statistics.median(anyio.run(slot_cost, make, 20_000) for _ in range(rounds))
        say(f"  {make}: {cost:,.1f} µs per slot")
    parent, child = multiprocessing.Pipe()
    server = multiprocessing.Process(target=serve, args=(pages, child), daemon=True)
    server.start()
    base_url = parent.recv()
    runs: dict[bool, list[float]] = {True: [], False: []}
    cpu: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(rounds):
        for gated in (False, True):
            before = resource.getrusage(resource.RUSAGE_SELF)
            result = anyio.run(lambda: crawl(base_url, gated=gated))  # noqa: B023
            after = resource.getrusage(resource.RUSAGE_SELF)
            assert result.stats.responses == pages, result
            used = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            runs[gated].append(result.stats.pages_per_second)
            cpu[gated].append(used / pages * 1e3)
            name = "with" if gated else "without"
            say(f"  {name} gate: {runs[gated][-1]:,.0f} pages/s, {cpu[gated][-1]:.2f} CPU ms/page")
    parent.close()
    server.join(10)
    without, with_gate = statistics.median(runs[False]), statistics.median(runs[True])
    cpu_without, cpu_with = statistics.median(cpu[False]), statistics.median(cpu[True])
    say(f"\n{pages:,} pages, one worker, concurrency {CONCURRENCY}, {rounds} rounds (medians)")
    say("| run | pages/s | CPU ms/page (worker) |\n|---|---|---|")
    say(f"| without gate | {without:,.0f} | {cpu_without:.2f} |")
    say(f"| with RedisDomainGate | {with_gate:,.0f} | {cpu_with:.2f} |")
    say(f"gate: {100 * (with_gate / without - 1):+.1f} % pages/s, {cpu_with - cpu_without:+.3f} CPU ms/page")


if __name__ == "__main__":
    main()
