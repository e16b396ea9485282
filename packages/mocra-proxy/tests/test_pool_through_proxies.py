"""The pool end to end: httpx through three real ForwardProxy instances to a local origin."""

from __future__ import annotations

import base64
import contextlib
import functools
import logging
from collections import Counter

import anyio
import httpx
import pytest

from mocra_proxy import Limits, Proxy, ProxyPool, RoundRobinPolicy, StaticSource
from mocra_proxy.testing import ForwardProxy, OriginServer

pytestmark = pytest.mark.anyio

BANS = frozenset({403, 407, 429})


class Clients:
    """One httpx client per proxy, made on first use and kept (making a client costs an SSL context)."""

    def __init__(self) -> None:
        self._clients: dict[str, httpx.AsyncClient] = {}

    def through(self, proxy: Proxy) -> httpx.AsyncClient:
        if proxy.id not in self._clients:
            self._clients[proxy.id] = httpx.AsyncClient(proxy=proxy.url)
        return self._clients[proxy.id]

    async def __aenter__(self) -> Clients:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for client in self._clients.values():
            await client.aclose()


async def get(
    pool: ProxyPool, url: str, *, key: str | None = None, clients: Clients | None = None, attempts: int = 4
) -> httpx.Response:
    """GET `url` through leased proxies, reporting each outcome; another proxy after a failure."""
    async with Clients() if clients is None else contextlib.nullcontext(clients) as through:
        for _ in range(attempts):
            async with pool.lease(key=key, domain="127.0.0.1", timeout=5) as lease:
                try:
                    response = await through.through(lease.proxy).get(url)
                except httpx.TransportError as exc:
                    await lease.failed(error=type(exc).__name__)
                    continue
                if response.status_code in BANS:
                    await lease.failed(response.status_code)
                    continue
                await lease.ok(response.status_code)
                return response
    raise AssertionError(f"no proxy fetched {url} in {attempts} attempts")


async def test_round_robin_rotates_across_three_proxies() -> None:
    site, proxies = OriginServer({"/": "page"}), [ForwardProxy() for _ in range(3)]
    async with site.running() as base, proxies[0].running(), proxies[1].running(), proxies[2].running():
        async with ProxyPool([StaticSource(p.url for p in proxies)], policy=RoundRobinPolicy()) as pool:
            pages = [(await get(pool, base + "/")).text for _ in range(6)]

    assert pages == ["page"] * 6
    assert [len(p.seen) for p in proxies] == [2, 2, 2]


async def test_a_403_proxy_is_cooled_down_and_comes_back() -> None:
    site = OriginServer({"/": "page"})
    banned, other = ForwardProxy(mode="forbid"), ForwardProxy()
    async with site.running() as base, banned.running(), other.running():
        source = StaticSource([banned.url, other.url])
        async with ProxyPool([source], policy=RoundRobinPolicy(), cooldown=0.3, max_errors=10) as pool:
            assert (await get(pool, base + "/")).text == "page"  # 403 from `banned`, then `other`
            banned.mode = "forward"  # unbanned, but the pool does not know yet
            for _ in range(3):
                await get(pool, base + "/")
            await anyio.sleep(0.35)
            for _ in range(4):
                await get(pool, base + "/")

    assert [s.status for s in banned.seen][0] == 403
    back = [s for s in banned.seen if s.status == 200]
    assert back, "the banned proxy was never used again after its cooldown"
    assert back[0].at - banned.seen[0].at >= 0.3  # nothing through it while it cooled down
    assert len(other.seen) >= 4


async def test_a_dead_proxy_is_evicted_and_the_page_still_arrives() -> None:
    site, dead, alive = OriginServer({"/": "page"}), ForwardProxy(), ForwardProxy()
    async with dead.running():
        pass  # its port is closed now
    async with site.running() as base, alive.running():
        source = StaticSource([dead.url, alive.url])
        async with ProxyPool([source], policy=RoundRobinPolicy(), max_errors=1) as pool:
            pages = [(await get(pool, base + "/")).text for _ in range(3)]
            stats, left = pool.stats(), pool.proxies

    assert pages == ["page"] * 3
    assert stats.evicted == 1
    assert left == [Proxy.parse(alive.url)]
    assert len(alive.seen) == 3


async def test_a_dropping_proxy_is_evicted_too() -> None:
    site, dropping, alive = OriginServer({"/": "page"}), ForwardProxy(mode="drop"), ForwardProxy()
    async with site.running() as base, dropping.running(), alive.running():
        source = StaticSource([dropping.url, alive.url])
        async with ProxyPool([source], policy=RoundRobinPolicy(), max_errors=1) as pool:
            pages = [(await get(pool, base + "/")).text for _ in range(3)]
            evicted = pool.stats().evicted

    assert pages == ["page"] * 3
    assert evicted == 1
    assert [s.status for s in dropping.seen] == [0]


async def test_sticky_key_keeps_its_proxy_until_it_fails() -> None:
    site, proxies = OriginServer({"/": "page"}), [ForwardProxy() for _ in range(3)]
    async with site.running() as base, proxies[0].running(), proxies[1].running(), proxies[2].running():
        async with ProxyPool([StaticSource(p.url for p in proxies)], policy=RoundRobinPolicy()) as pool:
            for _ in range(4):
                await get(pool, base + "/", key="alice")
                await get(pool, base + "/", key="bob")
            used = [len(p.seen) for p in proxies]
            first = next(
                p for p in proxies if p.seen and p.seen[0].at == min(q.seen[0].at for q in proxies if q.seen)
            )
            first.mode = "forbid"  # alice's proxy starts banning: alice moves, and stays on the new one
            for _ in range(3):
                await get(pool, base + "/", key="alice")

    assert sorted(used) == [0, 4, 4]  # two keys, one proxy each
    assert [s.status for s in first.seen[4:]] == [403]
    moved = [p for p in proxies if p is not first and p.seen and p.seen[-1].at > first.seen[-1].at]
    assert len(moved) == 1 and Counter(s.at > first.seen[-1].at for s in moved[0].seen)[True] == 3


async def test_proxy_authorization_is_sent_and_never_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    site = OriginServer({"/": "page"})
    secret = "pa55:word/!"
    proxies = [ForwardProxy(username=f"user{i}", password=secret) for i in range(3)]
    dead = ForwardProxy(username="user9", password=secret)
    async with dead.running():
        pass
    proxies[1].mode = "forbid"
    async with site.running() as base, proxies[0].running(), proxies[1].running(), proxies[2].running():
        urls = [dead.url, *(p.url for p in proxies)]
        async with ProxyPool([StaticSource(urls)], policy=RoundRobinPolicy(), max_errors=1) as pool:
            for _ in range(4):
                await get(pool, base + "/")
            shown = repr(pool) + repr(pool.proxies) + str(pool.stats())

    seen = [s for p in proxies for s in p.seen]
    assert seen and all(s.authorized for s in seen)
    assert all("proxy-authorization" not in r.headers for r in site.requests)
    token = base64.b64encode(f"user0:{secret}".encode()).decode()
    for text in (caplog.text, shown):
        assert secret not in text and "pa55%3Aword" not in text and token not in text
    assert "evicted" in caplog.text and "user9:***@" in caplog.text  # logged, redacted


async def test_per_proxy_rate_limit_is_honoured_at_the_proxies() -> None:
    site, proxies = OriginServer({"/": "page"}), [ForwardProxy(), ForwardProxy()]
    rate = 10.0
    async with site.running() as base, proxies[0].running(), proxies[1].running():
        source = StaticSource(p.url for p in proxies)
        async with ProxyPool([source], limits=Limits(rate=rate)) as pool, Clients() as clients:
            for proxy in pool.proxies:
                clients.through(proxy)  # made before the clock matters
            async with anyio.create_task_group() as tg:
                for _ in range(12):
                    tg.start_soon(functools.partial(get, pool, base + "/", clients=clients))

    assert sum(len(p.seen) for p in proxies) == 12
    for forward in proxies:
        arrivals = sorted(s.at for s in forward.seen)
        gaps = [b - a for a, b in zip(arrivals, arrivals[1:], strict=False)]
        assert gaps and min(gaps) >= 1 / rate - 0.03, gaps  # lease spacing, less connect jitter
