"""`ProxiedHttpx` through real ForwardProxies: rotation, bans and dead proxies within a call; the cache."""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING

import httpx
import pytest

from mocra_proxy import ProxiedHttpx, Proxy, ProxyPool, RoundRobinPolicy, StaticSource
from mocra_proxy.testing import ForwardProxy, OriginServer

if TYPE_CHECKING:
    from conftest import Origin

pytestmark = pytest.mark.anyio


async def test_rotates_across_three_proxies_and_reuses_one_client_per_proxy() -> None:
    site, proxies = OriginServer({"/": "page"}), [ForwardProxy() for _ in range(3)]
    async with site.running() as base, proxies[0].running(), proxies[1].running(), proxies[2].running():
        async with (
            ProxyPool([StaticSource(p.url for p in proxies)], policy=RoundRobinPolicy()) as pool,
            ProxiedHttpx(pool) as http,
        ):
            pages = [(await http.get(base + "/")).text for _ in range(9)]
            opened = http.clients_opened
            successes = sorted(pool.health(p).successes for p in pool.proxies)  # type: ignore[union-attr]

    assert pages == ["page"] * 9
    assert [len(p.seen) for p in proxies] == [3, 3, 3]
    assert opened == 3
    assert successes == [3, 3, 3]


async def test_a_ban_moves_to_another_proxy_within_one_call() -> None:
    site, banned, other = OriginServer({"/": "page"}), ForwardProxy(mode="forbid"), ForwardProxy()
    async with site.running() as base, banned.running(), other.running():
        async with (
            ProxyPool([StaticSource([banned.url, other.url])], policy=RoundRobinPolicy()) as pool,
            ProxiedHttpx(pool) as http,
        ):
            response = await http.get(base + "/")
            health = pool.health(Proxy.parse(banned.url))

    assert (response.status_code, response.text) == (200, "page")
    assert [s.status for s in banned.seen] == [403]
    assert [s.status for s in other.seen] == [200]
    assert health is not None and health.failures == 1 and health.cooldowns == 1


async def test_when_the_retries_run_out_the_ban_answer_is_returned() -> None:
    site, proxies = OriginServer({"/": "page"}), [ForwardProxy(mode="forbid") for _ in range(3)]
    async with site.running() as base, proxies[0].running(), proxies[1].running(), proxies[2].running():
        async with (
            ProxyPool([StaticSource(p.url for p in proxies)], policy=RoundRobinPolicy()) as pool,
            ProxiedHttpx(pool, retries=1) as http,
        ):
            response = await http.get(base + "/")

    assert response.status_code == 403
    assert sorted(len(p.seen) for p in proxies) == [0, 1, 1]  # two tries, two proxies


async def test_a_dead_proxy_is_evicted_and_the_page_arrives() -> None:
    site, dead, alive = OriginServer({"/": "page"}), ForwardProxy(), ForwardProxy()
    async with dead.running():
        pass  # its port is closed now
    async with site.running() as base, alive.running():
        source = StaticSource([dead.url, alive.url])
        async with (
            ProxyPool([source], policy=RoundRobinPolicy(), max_errors=1) as pool,
            ProxiedHttpx(pool) as http,
        ):
            pages = [(await http.get(base + "/")).text for _ in range(3)]
            stats, left = pool.stats(), pool.proxies

    assert pages == ["page"] * 3
    assert (stats.evicted, left) == (1, [Proxy.parse(alive.url)])
    assert len(alive.seen) == 3


async def test_a_dropped_connection_is_retried_for_get_but_not_for_post() -> None:
    site = OriginServer({"/": "page"})
    dropping, alive = ForwardProxy(mode="drop"), ForwardProxy()
    async with site.running() as base, dropping.running(), alive.running():
        source = StaticSource([dropping.url, alive.url])
        async with ProxyPool([source], policy=RoundRobinPolicy()) as pool, ProxiedHttpx(pool) as http:
            got = await http.get(base + "/")
            dropping.mode, alive.mode = "forward", "drop"  # round robin: the POST goes to `alive` now
            with pytest.raises(httpx.RemoteProtocolError):
                await http.post(base + "/", content=b"once")

    assert got.text == "page"
    assert [s.method for s in alive.seen] == ["GET", "POST"]
    assert [s.method for s in dropping.seen] == ["GET"]  # the POST was not sent a second time


async def test_connect_answered_407_is_retried_through_another_proxy(
    server_tls: ssl.SSLContext, client_tls: ssl.SSLContext
) -> None:
    site = OriginServer({"/secure": "tls page"}, ssl_context=server_tls)
    strict, good = (
        ForwardProxy(username="alice", password="right"),
        ForwardProxy(username="bob", password="pw"),
    )
    async with site.running() as base, strict.running(), good.running():
        wrong = strict.url.replace("alice:right@", "alice:wrong@")
        async with (
            ProxyPool([StaticSource([wrong, good.url])], policy=RoundRobinPolicy()) as pool,
            ProxiedHttpx(pool, verify=client_tls) as http,
        ):
            response = await http.get(base + "/secure")

    assert (response.status_code, response.text) == (200, "tls page")
    assert [(s.method, s.status) for s in strict.seen] == [("CONNECT", 407)]
    assert [(s.method, s.status) for s in good.seen] == [("CONNECT", 200)]


async def test_the_cache_keeps_max_clients_and_closes_the_least_recently_used() -> None:
    site, proxies = OriginServer({"/": "page"}), [ForwardProxy() for _ in range(3)]
    async with site.running() as base, proxies[0].running(), proxies[1].running(), proxies[2].running():
        async with ProxyPool([StaticSource(p.url for p in proxies)], policy=RoundRobinPolicy()) as pool:
            http = ProxiedHttpx(pool, max_clients=2)
            for _ in range(2):
                await http.get(base + "/")
            kept = http.clients_opened
            for _ in range(4):  # proxies 3, 1, 2, 3: each needs a client made again
                await http.get(base + "/")
            again = http.clients_opened
            await http.aclose()
            shown = repr(http)

    assert (kept, again) == (2, 6)
    assert shown.endswith("0 clients)")


async def test_a_client_proxy_argument_is_refused() -> None:
    async with ProxyPool([StaticSource(["http://127.0.0.1:9"])]) as pool:
        with pytest.raises(TypeError, match="proxy="):
            ProxiedHttpx(pool, proxy="http://127.0.0.1:9")


async def test_the_pools_ban_statuses_are_the_helpers(origin: Origin) -> None:
    teapot = origin.route("/teapot", "short and stout", status=418)
    proxies = [ForwardProxy(), ForwardProxy()]
    async with proxies[0].running(), proxies[1].running():
        source = StaticSource(p.url for p in proxies)
        async with (
            ProxyPool([source], policy=RoundRobinPolicy(), ban_statuses=[418]) as pool,
            ProxiedHttpx(pool, retries=1) as http,
        ):
            assert pool.ban_statuses == frozenset({418})
            response = await http.get(teapot)  # a ban: tried again through the other proxy
            health = [pool.health(Proxy.parse(p.url)) for p in proxies]

    assert response.status_code == 418
    assert [[s.status for s in p.seen] for p in proxies] == [[418], [418]]
    assert all(h is not None and (h.failures, h.cooldowns) == (1, 1) for h in health)
