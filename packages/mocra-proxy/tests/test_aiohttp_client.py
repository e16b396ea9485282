"""`ProxiedAiohttp` and `aiohttp_proxy_kwargs` through real ForwardProxy instances, over HTTP and CONNECT."""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING

import aiohttp
import pytest

from mocra_proxy import ProxiedAiohttp, Proxy, ProxyPool, RoundRobinPolicy, StaticSource, aiohttp_proxy_kwargs
from mocra_proxy.testing import ForwardProxy, OriginServer

if TYPE_CHECKING:
    from conftest import Origin

pytestmark = pytest.mark.anyio


async def test_rotates_over_http_with_logins_on_one_session() -> None:
    site = OriginServer({"/": "page"})
    proxies = [ForwardProxy(username=f"user{i}", password="p:w@d") for i in range(3)]
    async with site.running() as base, proxies[0].running(), proxies[1].running(), proxies[2].running():
        async with (
            ProxyPool([StaticSource(p.url for p in proxies)], policy=RoundRobinPolicy()) as pool,
            aiohttp.ClientSession() as session,
        ):
            http = ProxiedAiohttp(pool, session)
            pages = [await (await http.get(base + "/")).text() for _ in range(6)]

    assert pages == ["page"] * 6
    assert [[(s.authorized, s.status) for s in p.seen] for p in proxies] == [[(True, 200)] * 2] * 3


async def test_connect_to_a_tls_origin_and_a_ban_moves_to_another_proxy(
    server_tls: ssl.SSLContext, client_tls: ssl.SSLContext
) -> None:
    site = OriginServer({"/secure": "tls page"}, ssl_context=server_tls)
    banned, good = ForwardProxy(mode="forbid"), ForwardProxy(username="bob", password="pw")
    async with site.running() as base, banned.running(), good.running():
        async with (
            ProxyPool([StaticSource([banned.url, good.url])], policy=RoundRobinPolicy()) as pool,
            aiohttp.ClientSession() as session,
        ):
            response = await ProxiedAiohttp(pool, session).get(base + "/secure", ssl=client_tls)
            health = pool.health(Proxy.parse(banned.url))

    assert (response.status, await response.text()) == (200, "tls page")
    assert [(s.method, s.status) for s in banned.seen] == [("CONNECT", 403)]
    assert [(s.method, s.status) for s in good.seen] == [("CONNECT", 200)]
    assert health is not None and health.cooldowns == 1


async def test_a_dead_proxy_is_evicted_and_the_page_arrives() -> None:
    site, dead, alive = OriginServer({"/": "page"}), ForwardProxy(), ForwardProxy()
    async with dead.running():
        pass
    async with site.running() as base, alive.running():
        async with (
            ProxyPool([StaticSource([dead.url, alive.url])], policy=RoundRobinPolicy(), max_errors=1) as pool,
            aiohttp.ClientSession() as session,
        ):
            http = ProxiedAiohttp(pool, session)
            pages = [await (await http.get(base + "/")).text() for _ in range(2)]
            evicted = pool.stats().evicted

    assert pages == ["page"] * 2
    assert evicted == 1


async def test_the_kwargs_log_in_to_the_proxy() -> None:
    site, proxy = OriginServer({"/": "page"}), ForwardProxy(username="alice", password="s3:cr/et")
    async with site.running() as base, proxy.running(), aiohttp.ClientSession() as session:
        kwargs = aiohttp_proxy_kwargs(Proxy.parse(proxy.url))
        async with session.get(base + "/", **kwargs) as response:
            text = await response.text()

    assert kwargs == {"proxy": proxy.url}
    assert text == "page"
    assert [(s.authorized, s.status) for s in proxy.seen] == [(True, 200)]


async def test_the_pools_ban_statuses_are_the_helpers(origin: Origin) -> None:
    teapot = origin.route("/teapot", "short and stout", status=418)
    proxies = [ForwardProxy(), ForwardProxy()]
    async with proxies[0].running(), proxies[1].running():
        source = StaticSource(p.url for p in proxies)
        async with (
            ProxyPool([source], policy=RoundRobinPolicy(), ban_statuses=[418], cooldown=0.001) as pool,
            aiohttp.ClientSession() as session,
        ):
            banned = await ProxiedAiohttp(pool, session, retries=1).get(teapot)  # tried on both proxies
            answered = await ProxiedAiohttp(pool, session, ban_statuses=[403], retries=1).get(teapot)

    assert (banned.status, answered.status) == (418, 418)
    assert [[s.status for s in p.seen] for p in proxies] == [[418, 418], [418]]  # the override: one try
