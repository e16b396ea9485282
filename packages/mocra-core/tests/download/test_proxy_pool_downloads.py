"""Each built-in downloader through real `ForwardProxy` instances: a fixed proxy, a pool, failures, logins."""

from __future__ import annotations

import logging
import shutil
import ssl
import subprocess
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import anyio
import pytest

from mocra_core import DownloadError
from mocra_core.download import (
    AiohttpDownloader,
    DownloadSettings,
    HttpxDownloader,
    ProxyLeaser,
    ProxyRoute,
    build_downloader,
)
from mocra_core.download._proxy_transports import ProxyTransports
from mocra_core.http import Request
from mocra_core.testing import LocalServer, ServerResponse
from mocra_proxy import ProxyPool, RoundRobinPolicy, StaticSource
from mocra_proxy.testing import ForwardProxy, OriginServer

pytestmark = pytest.mark.anyio

BuiltIn = AiohttpDownloader | HttpxDownloader

SITE = {f"/p{i}": ServerResponse(body=f"page {i}") for i in range(12)}


@asynccontextmanager
async def proxies(*made: ForwardProxy) -> AsyncIterator[list[str]]:
    """Run every proxy; yields their URLs."""
    async with AsyncExitStack() as stack:
        yield [await stack.enter_async_context(proxy.running()) for proxy in made]


def pool_of(urls: list[str], **options: object) -> ProxyPool:
    return ProxyPool([StaticSource(urls)], policy=RoundRobinPolicy(), lease_timeout=5, **options)  # type: ignore[arg-type]


def downloader(transport: str, route: ProxyRoute) -> BuiltIn:
    return build_downloader(DownloadSettings(transport=transport), proxies=route)  # type: ignore[arg-type]


def pooled(transport: str, pool: ProxyPool) -> BuiltIn:
    return downloader(transport, ProxyRoute(pool=pool))


def forwarded(proxy: ForwardProxy) -> int:
    return sum(seen.status == 200 and seen.method == "GET" for seen in proxy.seen)


def test_a_proxy_pool_fits_the_leaser_protocol() -> None:
    leaser: ProxyLeaser = ProxyPool([StaticSource(["http://127.0.0.1:1"])])  # mypy checks it structurally
    assert isinstance(leaser, ProxyLeaser)


async def test_a_crawl_rotates_over_three_proxies(transport: str) -> None:
    three = [ForwardProxy(), ForwardProxy(), ForwardProxy()]
    server = LocalServer(SITE)
    async with server.running() as site, proxies(*three) as urls, pool_of(urls) as pool:
        async with pooled(transport, pool) as down:
            bodies = [(await down.download(Request(f"{site}/p{i}"))).body for i in range(9)]
    assert bodies == [f"page {i}".encode() for i in range(9)]
    assert [forwarded(proxy) for proxy in three] == [3, 3, 3]
    assert len(server.requests) == 9
    assert not down.proxy_failures


@pytest.mark.parametrize("dead", ["closed", "drop"])
async def test_a_dead_proxy_is_reported_and_the_page_arrives_via_another(
    transport: str, closed_port: int, dead: str
) -> None:
    good, dropping = ForwardProxy(), ForwardProxy(mode="drop")
    async with LocalServer(SITE).running() as site, proxies(good, dropping) as (good_url, drop_url):
        bad_url = f"http://127.0.0.1:{closed_port}" if dead == "closed" else drop_url
        async with pool_of([bad_url, good_url]) as pool, pooled(transport, pool) as down:
            responses = [await down.download(Request(f"{site}/p{i}")) for i in range(4)]
            health = pool.health(next(p for p in pool.proxies if p.url == bad_url))
    assert [r.status for r in responses] == [200] * 4
    assert forwarded(good) == 4
    assert down.proxy_failures == Counter({bad_url: 1})  # cooled down after its one failure
    assert health is not None and health.failures >= 1


async def test_a_ban_goes_to_another_proxy_not_to_the_dead_letters(transport: str) -> None:
    banned, good = ForwardProxy(mode="forbid"), ForwardProxy()
    async with LocalServer(SITE).running() as site, proxies(banned, good) as (banned_url, good_url):
        async with pool_of([banned_url, good_url]) as pool, pooled(transport, pool) as down:
            response = await down.download(Request(f"{site}/p1"))
    assert (response.status, response.body) == (200, b"page 1")
    assert down.proxy_failures == Counter({banned_url: 1})
    assert [seen.status for seen in banned.seen] == [403]


async def test_two_failing_proxies_fail_the_attempt_naming_the_last_redacted(
    transport: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    one = ForwardProxy(username="user", password="s3cret-pw", mode="drop")
    two = ForwardProxy(username="user", password="s3cret-pw", mode="drop")
    async with LocalServer(SITE).running() as site, proxies(one, two) as urls:
        async with pool_of(urls) as pool, pooled(transport, pool) as down:
            with pytest.raises(DownloadError) as caught:
                await down.download(Request(f"{site}/p1"))
    message = str(caught.value)
    assert "via proxy http://user:***@127.0.0.1:" in message
    assert "s3cret-pw" not in message
    assert sum(down.proxy_failures.values()) == 2  # one retry through another proxy, then the page's error
    assert len(one.seen) + len(two.seen) == 2
    assert "s3cret-pw" not in caplog.text


async def test_proxy_credentials_are_sent_and_never_logged(
    transport: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    locked = ForwardProxy(username="user", password="s3cret-pw")
    async with LocalServer(SITE).running() as site, proxies(locked) as [url]:
        async with pool_of([url]) as pool, pooled(transport, pool) as down:
            response = await down.download(Request(f"{site}/p2"))
    assert response.status == 200
    assert [seen.authorized for seen in locked.seen] == [True]
    for secret in ("s3cret-pw", "Proxy-Authorization", "dXNlcjpzM2NyZXQtcHc="):
        assert secret not in caplog.text


async def test_a_wrong_password_is_a_407_ban_retried_then_returned(transport: str) -> None:
    locked = ForwardProxy(username="user", password="right")
    async with LocalServer(SITE).running() as site, proxies(locked):
        wrong = f"http://user:wrong@{locked.address}"
        async with pool_of([wrong], cooldown=0.01) as pool, pooled(transport, pool) as down:
            response = await down.download(Request(f"{site}/p2"))
    assert response.status == 407  # the retry policy decides about the page; the proxy was tried twice
    assert [seen.status for seen in locked.seen] == [407, 407]
    assert down.proxy_failures == Counter({f"http://user:***@{locked.address}": 2})


async def test_a_fixed_proxy_url_and_a_request_choice(transport: str) -> None:
    fixed, other = ForwardProxy(), ForwardProxy()
    server = LocalServer(SITE)
    async with server.running() as site, proxies(fixed, other) as (fixed_url, other_url):
        async with downloader(transport, ProxyRoute(url=fixed_url)) as down:
            through_fixed = await down.download(Request(f"{site}/p1"))
            direct = await down.download(Request(f"{site}/p2", meta={"proxy": "direct"}))
            through_other = await down.download(Request(f"{site}/p3", meta={"proxy": other_url}))
            with pytest.raises(DownloadError, match="no pool named .pool. .pools: none is configured"):
                await down.download(Request(f"{site}/p4", meta={"proxy": "pool"}))
    assert [r.status for r in (through_fixed, direct, through_other)] == [200, 200, 200]
    assert [s.target for s in fixed.seen] == [f"{site}/p1"]
    assert [s.target for s in other.seen] == [f"{site}/p3"]
    assert len(server.requests) == 3


async def test_a_dead_fixed_proxy_names_itself_redacted(transport: str, closed_port: int) -> None:
    url = f"http://user:s3cret-pw@127.0.0.1:{closed_port}"
    async with LocalServer(SITE).running() as site:
        async with downloader(transport, ProxyRoute(url=url)) as down:
            with pytest.raises(DownloadError) as caught:
                await down.download(Request(f"{site}/p1"))
    assert f"via proxy http://user:***@127.0.0.1:{closed_port}" in str(caught.value)
    assert "s3cret-pw" not in str(caught.value)


async def test_a_session_key_keeps_its_proxy(transport: str) -> None:
    three = [ForwardProxy(), ForwardProxy(), ForwardProxy()]
    async with LocalServer(SITE).running() as site, proxies(*three) as urls, pool_of(urls) as pool:
        async with pooled(transport, pool) as down:
            session = down.session("account-1")
            for i in range(4):
                await session.download(Request(f"{site}/p{i}"))
    assert sorted(forwarded(proxy) for proxy in three) == [0, 0, 4]


@pytest.mark.parametrize("transport", ["httpx-aiohttp", "httpx"])  # aiohttp: one pool for all, no cache
async def test_a_transport_pushed_out_of_the_cache_finishes_its_request(transport: str) -> None:
    slow, fast = ForwardProxy(delay=0.3), ForwardProxy()
    async with LocalServer(SITE).running() as site, proxies(slow, fast) as (slow_url, fast_url):
        down = HttpxDownloader(DownloadSettings(transport=transport), proxies=ProxyRoute())  # type: ignore[arg-type]
        down._via = ProxyTransports(down.settings, capacity=1)
        async with down, anyio.create_task_group() as tg:
            got: list[int] = []

            async def fetch(path: str, proxy: str) -> None:
                got.append((await down.download(Request(f"{site}{path}", meta={"proxy": proxy}))).status)

            tg.start_soon(fetch, "/p1", slow_url)
            await anyio.wait_all_tasks_blocked()
            await fetch("/p2", fast_url)  # evicts the slow proxy's transport while it is in use
            assert len(down._via) == 1
    assert got == [200, 200]
    assert [s.status for s in slow.seen] == [200]


@pytest.fixture(scope="module")
def server_tls(tmp_path_factory: pytest.TempPathFactory) -> ssl.SSLContext:
    """A server context with a self-signed certificate for 127.0.0.1, made with the openssl CLI."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


async def test_an_https_page_through_connect_and_a_banned_tunnel(
    transport: str, server_tls: ssl.SSLContext
) -> None:
    banned, good = ForwardProxy(mode="forbid"), ForwardProxy(username="user", password="pw")
    origin = OriginServer({"/secure": "tls page"}, ssl_context=server_tls)
    async with origin.running() as site, proxies(banned, good) as urls, pool_of(urls) as pool:
        settings = DownloadSettings(transport=transport, verify=False)  # type: ignore[arg-type]
        async with build_downloader(settings, proxies=ProxyRoute(pool=pool)) as down:
            response = await down.download(Request(f"{site}/secure"))
    assert (response.status, response.body) == (200, b"tls page")
    assert [(s.method, s.status) for s in banned.seen] == [("CONNECT", 403)]
    assert [(s.method, s.status, s.authorized) for s in good.seen] == [("CONNECT", 200, True)]
    assert down.proxy_failures == Counter({urls[0]: 1})
