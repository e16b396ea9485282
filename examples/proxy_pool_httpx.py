"""mocra-proxy with plain httpx (nothing from mocra): rotate proxies, drop banned and dead ones.

It runs offline: it starts a local site and three local proxies — one healthy, one that answers 403 to
everything (banned), one whose port is closed (dead) — and fetches ten pages through the pool. With
`max_errors=1` the first failure evicts a proxy; by default a ban or connect error first cools it down
(exponential backoff) and only `max_errors` failures in a row evict it.

    python examples/proxy_pool_httpx.py
"""

from __future__ import annotations

import anyio
import httpx

from mocra_proxy import Limits, ProxyPool, RoundRobinPolicy, StaticSource
from mocra_proxy.testing import ForwardProxy, OriginServer

BANS = {403, 407, 429}


async def fetch(pool: ProxyPool, clients: dict[str, httpx.AsyncClient], url: str) -> httpx.Response:
    """GET `url` through the pool: each try on a leased proxy, each outcome reported."""
    for _ in range(3):
        async with pool.lease(domain=httpx.URL(url).host) as lease:
            if lease.proxy.id not in clients:  # one client per proxy, reused
                clients[lease.proxy.id] = httpx.AsyncClient(proxy=lease.proxy.url)
            client = clients[lease.proxy.id]
            try:
                response = await client.get(url)
            except httpx.TransportError as exc:  # the proxy is unreachable: cool it down
                await lease.failed(error=type(exc).__name__)
                continue
            if response.status_code in BANS:  # the proxy is blocked: cool it down, try another
                await lease.failed(response.status_code)
                continue
            await lease.ok(response.status_code)
            return response
    raise RuntimeError(f"no proxy could fetch {url}")


async def main() -> None:
    site = OriginServer({f"/page/{i}": f"page {i}" for i in range(10)})
    good = ForwardProxy(username="alice", password="s3cret")
    banned = ForwardProxy(username="alice", password="s3cret", mode="forbid")
    dead = ForwardProxy()
    async with dead.running():
        pass  # started and stopped: its port now refuses connections
    clients: dict[str, httpx.AsyncClient] = {}
    async with site.running() as base, good.running(), banned.running():
        source = StaticSource([good.url, banned.url, dead.url])
        policy, limits = RoundRobinPolicy(), Limits(rate=50.0, concurrency=4)  # per proxy
        async with ProxyPool([source], policy=policy, limits=limits, max_errors=1) as pool:
            print("pool:", ", ".join(proxy.redacted for proxy in pool.proxies))
            try:
                pages = [(await fetch(pool, clients, f"{base}/page/{i}")).text for i in range(10)]
            finally:
                for client in clients.values():
                    await client.aclose()
            print(f"fetched {len(pages)} pages: {pages[0]!r} ... {pages[-1]!r}")
            print("evicted:", pool.stats().evicted, "- left:", ", ".join(p.redacted for p in pool.proxies))
    print(f"the good proxy served {good.served}; the banned one answered 403 {len(banned.seen)} time(s)")


if __name__ == "__main__":
    anyio.run(main)
