"""The test proxy is a real forward proxy: plain HTTP, CONNECT to a TLS origin, login, and failures."""

from __future__ import annotations

import ssl

import aiohttp
import anyio
import httpx
import pytest

from mocra_proxy.testing import ForwardProxy, OriginServer

pytestmark = pytest.mark.anyio


async def test_plain_http_goes_through_and_is_recorded() -> None:
    site, proxy = OriginServer({"/a": "page a"}), ForwardProxy()
    async with (
        site.running() as base,
        proxy.running() as proxy_url,
        httpx.AsyncClient(proxy=proxy_url) as client,
    ):
        response = await client.get(base + "/a?x=1")

    assert (response.status_code, response.text) == (200, "page a")
    assert [(s.method, s.target, s.authorized, s.status) for s in proxy.seen] == [
        ("GET", base + "/a?x=1", True, 200)
    ]
    assert site.requests[0].target == "/a?x=1"  # origin-form at the origin


async def test_login_required_answers_407_without_credentials_and_never_forwards_them() -> None:
    site, proxy = OriginServer({"/": "ok"}), ForwardProxy(username="alice", password="s3cret:x")
    async with site.running() as base, proxy.running() as proxy_url:
        async with httpx.AsyncClient(proxy=f"http://{proxy.address}") as anonymous:
            refused = await anonymous.get(base + "/")
        async with httpx.AsyncClient(proxy=f"http://alice:wrong@{proxy.address}") as wrong:
            wrong_answer = await wrong.get(base + "/")
        async with httpx.AsyncClient(proxy=proxy_url) as client:
            answer = await client.get(base + "/")

    assert refused.status_code == 407
    assert refused.headers["proxy-authenticate"].startswith("Basic")
    assert wrong_answer.status_code == 407
    assert (answer.status_code, answer.text) == (200, "ok")
    assert [(s.authorized, s.status) for s in proxy.seen] == [(False, 407), (False, 407), (True, 200)]
    assert len(site.requests) == 1
    assert "proxy-authorization" not in site.requests[0].headers


async def test_connect_tunnels_https_to_a_local_tls_origin_with_httpx(
    server_tls: ssl.SSLContext, client_tls: ssl.SSLContext
) -> None:
    site, proxy = (
        OriginServer({"/secure": "tls page"}, ssl_context=server_tls),
        ForwardProxy(username="u", password="p"),
    )
    async with (
        site.running() as base,
        proxy.running() as proxy_url,
        httpx.AsyncClient(proxy=proxy_url, verify=client_tls) as client,
    ):
        first = await client.get(base + "/secure")
        second = await client.get(base + "/missing")  # the same tunnel, kept alive

    assert base.startswith("https://127.0.0.1:")
    assert (first.status_code, first.text, second.status_code) == (200, "tls page", 404)
    assert [(s.method, s.target, s.authorized, s.status) for s in proxy.seen] == [
        ("CONNECT", f"127.0.0.1:{site.port}", True, 200)
    ]
    assert [r.target for r in site.requests] == ["/secure", "/missing"]


async def test_https_origin_is_not_trusted_without_its_certificate(server_tls: ssl.SSLContext) -> None:
    site, proxy = OriginServer({"/": "x"}, ssl_context=server_tls), ForwardProxy()
    async with (
        site.running() as base,
        proxy.running() as proxy_url,
        httpx.AsyncClient(proxy=proxy_url) as client,
    ):
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await client.get(base + "/")


async def test_aiohttp_through_the_proxy_over_http_and_connect(
    server_tls: ssl.SSLContext, client_tls: ssl.SSLContext
) -> None:
    plain, tls = OriginServer({"/p": "plain"}), OriginServer({"/t": "tunnelled"}, ssl_context=server_tls)
    proxy = ForwardProxy(username="bob", password="pw")
    async with plain.running() as plain_base, tls.running() as tls_base, proxy.running() as proxy_url:
        async with aiohttp.ClientSession() as session:
            async with session.get(plain_base + "/p", proxy=proxy_url) as response:
                plain_answer = (response.status, await response.text())
            async with session.get(tls_base + "/t", proxy=proxy_url, ssl=client_tls) as response:
                tls_answer = (response.status, await response.text())

    assert plain_answer == (200, "plain")
    assert tls_answer == (200, "tunnelled")
    assert [(s.method, s.authorized, s.status) for s in proxy.seen] == [
        ("GET", True, 200),
        ("CONNECT", True, 200),
    ]


async def test_forbid_mode_answers_403_to_http_and_connect(client_tls: ssl.SSLContext) -> None:
    site, proxy = OriginServer({"/": "never"}), ForwardProxy(mode="forbid")
    async with site.running() as base, proxy.running() as proxy_url:
        async with httpx.AsyncClient(proxy=proxy_url, verify=client_tls) as client:
            answer = await client.get(base + "/")
            with pytest.raises(httpx.ProxyError, match="403"):
                await client.get(f"https://127.0.0.1:{site.port}/")

    assert answer.status_code == 403
    assert [(s.method, s.status) for s in proxy.seen] == [("GET", 403), ("CONNECT", 403)]
    assert site.requests == []


async def test_forbid_after_serves_n_requests_then_403_and_can_be_switched_back() -> None:
    site, proxy = OriginServer({"/": "ok"}), ForwardProxy(forbid_after=2)
    async with (
        site.running() as base,
        proxy.running() as proxy_url,
        httpx.AsyncClient(proxy=proxy_url) as client,
    ):
        statuses = [(await client.get(base + "/")).status_code for _ in range(4)]
        proxy.forbid_after = None
        statuses.append((await client.get(base + "/")).status_code)

    assert statuses == [200, 200, 403, 403, 200]
    assert proxy.served == 3
    assert len(site.requests) == 3


async def test_drop_mode_closes_the_connection_without_an_answer() -> None:
    site, proxy = OriginServer({"/": "never"}), ForwardProxy(mode="drop")
    async with (
        site.running() as base,
        proxy.running() as proxy_url,
        httpx.AsyncClient(proxy=proxy_url) as client,
    ):
        with pytest.raises(httpx.RemoteProtocolError):
            await client.get(base + "/")

    assert [(s.method, s.status) for s in proxy.seen] == [("GET", 0)]
    assert site.requests == []


async def test_a_stopped_proxy_refuses_connections() -> None:
    site, proxy = OriginServer({"/": "ok"}), ForwardProxy()
    async with site.running() as base:
        async with proxy.running() as proxy_url:
            pass
        async with httpx.AsyncClient(proxy=proxy_url) as client:
            with pytest.raises(httpx.ConnectError):
                await client.get(base + "/")

    assert proxy.seen == []


async def test_an_unreachable_origin_gets_502() -> None:
    closed = ForwardProxy()
    async with closed.running():
        pass  # a port that was open and is now closed
    proxy = ForwardProxy()
    async with proxy.running() as proxy_url, httpx.AsyncClient(proxy=proxy_url) as client:
        answer = await client.get(f"http://{closed.address}/")

    assert answer.status_code == 502
    assert [s.status for s in proxy.seen] == [502]


async def test_seen_timestamps_are_monotonic_and_taken_on_arrival() -> None:
    site, proxy = OriginServer({"/": "ok"}), ForwardProxy(delay=0.05)
    async with (
        site.running() as base,
        proxy.running() as proxy_url,
        httpx.AsyncClient(proxy=proxy_url) as client,
    ):
        before = anyio.current_time()
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(client.get, base + "/")
        after = anyio.current_time()

    assert len(proxy.seen) == 3
    # on arrival, before the delay: all three arrived before any was answered
    assert all(before <= s.at <= after - 0.05 for s in proxy.seen)


def test_run_in_thread_serves_sync_clients() -> None:
    site, proxy = OriginServer({"/": "sync"}), ForwardProxy(username="u", password="p")
    with site.run_in_thread() as base, proxy.run_in_thread() as proxy_url:
        answer = httpx.get(base + "/", proxy=proxy_url)

    assert answer.text == "sync"
    assert proxy.url == f"http://u:p@127.0.0.1:{proxy.port}"
    assert [s.authorized for s in proxy.seen] == [True]
