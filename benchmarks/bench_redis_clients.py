"""Shared vs own Redis clients for a run's coordination store, seen set and gate (issue 16).

Each of `--workers` tasks does, per "page", what a broker worker's stages do against Redis: a seen-set
batch of one fingerprint, a gate enter + leave, and a counter increment. Run with the three stores each on
a client of its own (as before issue 16), then on one client (`RedisClients`), alternating rounds; prints
pages/s and the server's connection count for each.

    uv run python benchmarks/bench_redis_clients.py --pages 20000 --workers 64 --rounds 3
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import time
import uuid

import anyio
import redis

from mocra_core.backends.redis._clients import RedisClients
from mocra_core.coordination import RedisCoordination
from mocra_core.dedup import RedisSeenSet
from mocra_core.download import RedisDomainGate, Ticket

URL = "redis://127.0.0.1:6379/13"


async def crawl(pages: int, workers: int, shared: bool) -> tuple[float, int]:
    namespace = f"bench-clients-{uuid.uuid4().hex}"
    clients = RedisClients()
    client = clients.get(URL) if shared else None
    coordination = RedisCoordination(URL, namespace=namespace, client=client)
    seen = RedisSeenSet(URL, namespace=namespace, client=client)
    gate = RedisDomainGate(URL, namespace=namespace, client=client)
    counter = iter(range(pages))
    connections = 0
    async with coordination, seen, gate:

        async def worker(k: int) -> None:
            nonlocal connections
            for n in counter:
                fp = hashlib.blake2b(f"{namespace}/{n}".encode(), digest_size=16).digest()
                await seen.add_if_absent([fp])
                ticket = await gate.enter(f"site{n % 16}.example", limit=1000, gap=0.0, ttl=30.0)
                assert isinstance(ticket, Ticket)
                await gate.leave(ticket)
                await coordination.incr("pages")
            if k == 0:
                with redis.Redis.from_url(URL) as raw:
                    connections = int(raw.info("clients")["connected_clients"])

        start = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for k in range(workers):
                tg.start_soon(worker, k)
        elapsed = time.perf_counter() - start
    await clients.aclose()
    with redis.Redis.from_url(URL) as raw:
        keys = raw.keys(f"{namespace}:*")
        if keys:
            raw.delete(*keys)
    return pages / elapsed, connections


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rates: dict[str, list[float]] = {"own": [], "shared": []}
    conns: dict[str, list[int]] = {"own": [], "shared": []}
    for r in range(args.rounds):
        order = ("own", "shared") if r % 2 == 0 else ("shared", "own")
        for mode in order:
            rate, connections = anyio.run(crawl, args.pages, args.workers, mode == "shared")
            rates[mode].append(rate)
            conns[mode].append(connections)
            print(f"round {r + 1} {mode:6} {rate:8.0f} pages/s  {connections} connections on the server")
    for mode in ("own", "shared"):
        print(f"{mode:6} median {statistics.median(rates[mode]):8.0f} pages/s, connections {conns[mode]}")


if __name__ == "__main__":
    main()
