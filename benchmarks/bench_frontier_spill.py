"""Peak RSS of a 1M-URL frontier with the default in-memory queue (which spills past 100,000 requests).

Run: uv run python benchmarks/bench_frontier_spill.py
"""

import resource
import time

import anyio

from mocra_core.dedup import MemorySeenSet
from mocra_core.engine._codec import EngineCodec
from mocra_core.engine._frontier import Frontier
from mocra_core.http import Request, Routing
from mocra_core.observe import Stats
from mocra_core.queue import SpillingQueue


async def main():
    async with (
        SpillingQueue(codec=EngineCodec(), topics={"request"}, threshold=100_000) as q,
        MemorySeenSet() as seen,
    ):
        f = Frontier(q, seen, Stats())
        t = time.perf_counter()
        for b in range(0, 1_000_000, 1000):
            await f.submit(
                [Request(f"http://example.com/item/{i}?ref=x") for i in range(b, b + 1000)], Routing()
            )
        dt = time.perf_counter() - t
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        pending = await q.pending("request")
        per_url = rss * 1024 * 1024 / 1e6
        print(f"1M URLs: pending={pending} spilled={q.spilled} peak RSS {rss:.0f} MB ({per_url:.0f} B/URL)")
        print(f"push {1e6 / dt:,.0f} URLs/s")


anyio.run(main)
