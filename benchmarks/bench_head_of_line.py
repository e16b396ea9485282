"""Measure head-of-line blocking: a fast domain's crawl time alone and behind a slow domain queued first.

Run: `uv run python benchmarks/bench_head_of_line.py [--backend memory|redis] [--rounds 3] [--workers-wait]`
(Redis: 127.0.0.1:6379 db 15; each crawl is a job of its own, its keys deleted afterwards).

Two sites, each served from a process of its own on 127.0.0.1: the slow one (`--slow` pages, `--slow-delay`
seconds each) is addressed as `localhost`, the fast one (`--fast` pages, `--fast-delay` s each) as
`127.0.0.1`, so they are two domains. One crawl fetches the fast pages alone; the other fetches the slow
pages first, then the fast ones (queued in that order). The figure is the time from the start of the crawl
to the last fast page parsed, median over the rounds (the two crawls alternate), and its ratio. A third
crawl puts `--slow` pages of a domain answering `429` with `Retry-After: 300` first
(`retry.max_domain_backoff=300`) and times the fast pages behind it (then interrupts the crawl: the
blocked requests stay in the queue).

`--workers-wait` runs the download stage as it was before the per-domain ready queues: each worker takes
the next request and waits in `DomainLimiter.slot` for its domain (for comparison).
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import time
import uuid
from typing import TYPE_CHECKING, Any

import anyio

from mocra_core import Mocra, Spider
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from mocra_core import Ctx, Response

REDIS_URL = "redis://127.0.0.1:6379/15"


def say(line: str) -> None:
    """Print one line of the report."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def serve(delay: float, status: int, conn: Connection) -> None:
    """Serve every path after `delay` s with `status` until the parent closes `conn` (in a child process)."""

    async def page(_: ServerRequest) -> ServerResponse:
        if status == 429:
            return ServerResponse(429, "slow down", headers={"Retry-After": "300"})
        await anyio.sleep(delay)
        return ServerResponse(body="<html><body>ok</body></html>")

    async def main() -> None:
        server = LocalServer(fallback=page)
        async with server.running():
            conn.send(server.port)
            await anyio.to_thread.run_sync(conn.recv_bytes)  # EOF when the parent is done

    try:
        anyio.run(main)
    except EOFError:
        pass


class Timed(Spider[None]):
    """Fetches its start URLs in order; notes when each was parsed and when `expect` of them were."""

    name = "timed"

    def __init__(self, urls: list[str], expect: int) -> None:
        self.start_urls = urls  # type: ignore[misc]
        self.started = time.monotonic()
        self.done: dict[str, float] = {}
        self.expect = expect
        self.all_parsed = anyio.Event()

    async def parse(self, response: Response, ctx: Ctx[None]) -> None:
        self.done[response.url] = time.monotonic() - self.started
        if len(self.done) >= self.expect:
            self.all_parsed.set()


def workers_wait() -> None:
    """Put back the download stage of before: a worker takes the next request and waits for its domain."""
    from mocra_core.engine import _download
    from mocra_core.engine._feeder import Feeder
    from mocra_core.topics import REQUESTS

    async def run(self: Any, concurrency: int) -> None:
        async def handle(delivery: Any) -> None:
            got = await self._prepare(delivery)
            if got is not None:
                await self._fetch(delivery, got[1], self._limiter.slot(got[0]))

        feeder = Feeder(self._queue, REQUESTS, "download", lambda: self._stopping, outage=self._outage)
        feeder.stop = lambda: None  # type: ignore[attr-defined]  # it stops when `_stopping` is set
        self._feeder = feeder
        await feeder.run(concurrency, handle)

    _download.DownloadStage.run = run  # type: ignore[method-assign]


async def crawl(args: argparse.Namespace, urls: list[str], fast: list[str], *, interrupt: bool) -> float:
    """One crawl of `urls`; seconds from its start to the last of `fast` parsed."""
    job = f"bench-hol-{uuid.uuid4().hex[:12]}"
    settings = [
        "crawl.obey_robots=false",
        f"crawl.concurrency={args.concurrency}",
        f"crawl.per_domain_concurrency={args.per_domain}",
        "retry.max_domain_backoff=300",
    ]
    if args.backend == "redis":
        settings += [f"queue.url={REDIS_URL}", f"crawl.job={job}"]
    spider = Timed(urls, len(fast) if interrupt else len(urls))
    engine = Mocra.builder().set(*settings).spider(spider).build()
    try:
        async with anyio.create_task_group() as tg:
            if interrupt:

                async def stop_when_done() -> None:
                    with anyio.move_on_after(args.give_up):
                        await spider.all_parsed.wait()
                    engine.interrupt()

                tg.start_soon(stop_when_done)
            await engine.run()
    finally:
        if args.backend == "redis":
            import redis

            with redis.Redis.from_url(REDIS_URL) as client:
                if keys := list(client.scan_iter(match=f"mocra-{job}*", count=1000)):
                    client.delete(*keys)
    times = [spider.done[url] for url in fast if url in spider.done]
    return max(times) if len(times) == len(fast) else float("inf")


def start_site(delay: float, status: int = 200) -> tuple[Connection, multiprocessing.Process, int]:
    """A site in a child process: the pipe that keeps it up, the process and its port."""
    parent, child = multiprocessing.Pipe()
    process = multiprocessing.Process(target=serve, args=(delay, status, child), daemon=True)
    process.start()
    return parent, process, parent.recv()


def main() -> None:
    """Alternate the crawls; print the medians and the ratios."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", choices=("memory", "redis"), default="memory")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--per-domain", type=int, default=8)
    ap.add_argument("--slow", type=int, default=48, help="slow pages, queued first (default 3 x 16)")
    ap.add_argument("--slow-delay", type=float, default=1.0)
    ap.add_argument("--fast", type=int, default=300)
    ap.add_argument("--fast-delay", type=float, default=0.025)
    ap.add_argument("--give-up", type=float, default=60.0, help="seconds before a blocked crawl is stopped")
    ap.add_argument("--workers-wait", action="store_true", help="the download stage of before, to compare")
    args = ap.parse_args()
    if args.workers_wait:
        workers_wait()
    sites = [start_site(args.slow_delay), start_site(args.fast_delay), start_site(0.0, 429)]
    slow_port, fast_port, blocked_port = (port for *_, port in sites)
    slow = [f"http://localhost:{slow_port}/s/{n}" for n in range(args.slow)]
    blocked = [f"http://localhost:{blocked_port}/b/{n}" for n in range(args.slow)]
    fast = [f"http://127.0.0.1:{fast_port}/f/{n}" for n in range(args.fast)]
    anyio.run(lambda: crawl(args, fast[:1], fast[:1], interrupt=False))  # warm up
    runs: dict[str, list[float]] = {"alone": [], "behind slow": [], "behind blocked": []}
    for _ in range(args.rounds):
        for name, urls in (("alone", fast), ("behind slow", slow + fast), ("behind blocked", blocked + fast)):
            took = anyio.run(lambda: crawl(args, urls, fast, interrupt=name == "behind blocked"))  # noqa: B023
            runs[name].append(took)
            say(f"  {name}: {took:.2f} s" if took < float("inf") else f"  {name}: not done")
    for parent, process, _ in sites:
        parent.close()
        process.join(10)
    stage = "workers wait for their domain" if args.workers_wait else "per-domain ready queues"
    say(
        f"\n{args.fast} fast pages ({args.fast_delay:g} s each) behind {args.slow} slow ones "
        f"({args.slow_delay:g} s each) or blocked ones (Retry-After: 300); concurrency {args.concurrency}, "
        f"{args.per_domain} per domain, {args.backend} queue, {stage}; medians of {args.rounds} rounds"
    )
    alone = statistics.median(runs["alone"])
    say("| fast domain | time to its last page | vs alone |\n|---|---|---|")
    for name, times in runs.items():
        median = statistics.median(times)
        if median == float("inf"):
            say(f"| {name} | not done in {args.give_up:g} s | — |")
        else:
            say(f"| {name} | {median:.2f} s | {median / alone:.2f}x |")


if __name__ == "__main__":
    main()
