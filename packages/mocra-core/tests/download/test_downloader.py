"""The built-in downloaders against a real local server: every test runs on each `transport`."""

from __future__ import annotations

import gzip
import re
import socket
import tracemalloc
import zlib
from typing import TYPE_CHECKING

import anyio
import httpx
import pytest

from mocra_core import BodyTooLarge, DownloadError, DownloadTimeout, TooManyRedirects, UnfetchableURL
from mocra_core.download import ACCEPT_ENCODING, Downloader, HttpxDownloader
from mocra_core.http import Request
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterator

    from conftest import MakeDownloader

pytestmark = pytest.mark.anyio


def echo(req: ServerRequest) -> ServerResponse:
    lines = [f"{req.method} {req.target}", *(f"{k}: {v}" for k, v in sorted(req.headers.items()))]
    return ServerResponse(
        body="\n".join(lines) + "\n\n" + req.body.decode(), headers={"Content-Type": "text/plain"}
    )


async def echo_handler(req: ServerRequest) -> ServerResponse:
    return echo(req)


def redirect(location: str, status: int = 302, **headers: str) -> ServerResponse:
    return ServerResponse(status, headers={"Location": location, **headers})


# ---------------------------------------------------------------------------------------------- basics


async def test_is_a_downloader_and_returns_the_body(make_downloader: MakeDownloader) -> None:
    server = LocalServer({"/": ServerResponse(body="<h1>hi</h1>")})
    downloader = make_downloader()
    assert isinstance(downloader, Downloader)
    async with server.running() as base:
        response = await downloader.download(Request(base + "/"))
    assert (response.status, response.body, response.url) == (200, b"<h1>hi</h1>", base + "/")
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.request.url == base + "/"
    assert response.elapsed > 0


@pytest.mark.parametrize("status", [404, 500, 503])
async def test_error_statuses_are_responses_not_exceptions(
    make_downloader: MakeDownloader, status: int
) -> None:
    server = LocalServer({"/x": ServerResponse(status, body="nope")})
    async with server.running() as base:
        response = await make_downloader().download(Request(base + "/x"))
    assert (response.status, response.body, response.ok) == (status, b"nope", False)


async def test_default_headers_and_request_headers_merged_case_insensitively(
    make_downloader: MakeDownloader,
) -> None:
    server = LocalServer(fallback=echo_handler)
    downloader = make_downloader(headers={"Accept-Language": "de", "X-Default": "1"})
    async with server.running() as base:
        await downloader.download(Request(base + "/a"))
        await downloader.download(Request(base + "/b", headers={"user-agent": "custom/2", "x-default": "2"}))
    first, second = server.requests
    assert first.headers["user-agent"] == downloader.settings.user_agent
    assert first.headers["user-agent"].startswith("mocra/")
    assert first.headers["accept-encoding"] == ACCEPT_ENCODING
    assert (first.headers["accept-language"], first.headers["x-default"]) == ("de", "1")
    assert (second.headers["user-agent"], second.headers["x-default"]) == ("custom/2", "2")


async def test_post_body_is_sent(make_downloader: MakeDownloader) -> None:
    server = LocalServer(fallback=echo_handler)
    async with server.running() as base:
        response = await make_downloader().download(Request(base + "/api", method="POST", json={"a": 1}))
    assert response.body.startswith(b"POST /api\n")
    assert response.body.endswith(b'\n\n{"a":1}')
    assert server.requests[0].headers["content-type"] == "application/json"


async def test_closed_downloader_refuses_requests(make_downloader: MakeDownloader) -> None:
    downloader = make_downloader()
    await downloader.aclose()
    await downloader.aclose()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        await downloader.download(Request("http://127.0.0.1:9/"))


async def test_async_context_manager_closes(make_downloader: MakeDownloader) -> None:
    server = LocalServer({"/": ServerResponse(body="ok")})
    async with server.running() as base, make_downloader() as downloader:
        assert (await downloader.download(Request(base + "/"))).body == b"ok"
    with pytest.raises(RuntimeError):
        await downloader.download(Request(base + "/"))


# ---------------------------------------------------------------------------------------------- errors


async def test_refused_connection_is_a_download_error_not_a_timeout(
    make_downloader: MakeDownloader, closed_port: int
) -> None:
    url = f"http://127.0.0.1:{closed_port}/x"
    with pytest.raises(DownloadError) as info:
        await make_downloader().download(Request(url))
    assert not isinstance(info.value, DownloadTimeout)
    assert url in str(info.value)
    assert info.value.request is not None and info.value.request.url == url
    assert info.value.__cause__ is not None
    assert info.value.retryable


@pytest.fixture
def unaccepting_port() -> Iterator[int]:
    """A port whose listener never accepts and whose backlog is full: a connect hangs until it times out."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers: list[socket.socket] = []
    for _ in range(8):  # fill the accept queue; later SYNs are dropped
        filler = socket.socket()
        filler.setblocking(False)
        try:
            filler.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        fillers.append(filler)
    yield port
    for s in (*fillers, listener):
        s.close()


async def test_connect_timeout(make_downloader: MakeDownloader, unaccepting_port: int) -> None:
    url = f"http://127.0.0.1:{unaccepting_port}/"
    with anyio.fail_after(5), pytest.raises(DownloadTimeout, match="timed out") as info:
        await make_downloader(connect_timeout=0.2).download(Request(url))
    assert url in str(info.value)
    assert info.value.retryable and info.value.request is not None


async def test_read_timeout_waiting_for_headers(make_downloader: MakeDownloader) -> None:
    async def slow(req: ServerRequest) -> ServerResponse:
        await anyio.sleep(5)
        return ServerResponse(body="late")

    server = LocalServer({"/slow": slow})
    async with server.running() as base:
        with anyio.fail_after(4), pytest.raises(DownloadTimeout, match="/slow"):
            await make_downloader(read_timeout=0.2).download(Request(base + "/slow"))


async def test_read_timeout_in_the_middle_of_the_body(make_downloader: MakeDownloader) -> None:
    async def stalls() -> AsyncIterator[bytes]:
        yield b"first part"
        await anyio.sleep(5)
        yield b"never"

    async def handler(req: ServerRequest) -> ServerResponse:
        return ServerResponse(chunks=stalls())

    server = LocalServer({"/stall": handler})
    async with server.running() as base:
        with anyio.fail_after(4), pytest.raises(DownloadTimeout):
            await make_downloader(read_timeout=0.2).download(Request(base + "/stall"))


async def trickle() -> AsyncIterator[bytes]:
    while True:  # a byte every 50 ms: no read ever times out, the whole exchange never ends
        yield b"."
        await anyio.sleep(0.05)


async def trickle_handler(req: ServerRequest) -> ServerResponse:
    return ServerResponse(chunks=trickle())


async def test_total_timeout_bounds_the_whole_exchange(make_downloader: MakeDownloader) -> None:
    server = LocalServer({"/trickle": trickle_handler})
    async with server.running() as base:
        with anyio.fail_after(4), pytest.raises(DownloadTimeout, match="total timeout"):
            await make_downloader(read_timeout=1.0, total_timeout=0.3).download(Request(base + "/trickle"))


async def test_request_timeout_overrides_total_timeout(make_downloader: MakeDownloader) -> None:
    server = LocalServer({"/trickle": trickle_handler})
    async with server.running() as base:
        with anyio.fail_after(4), pytest.raises(DownloadTimeout, match=r"within 0\.3s"):
            await make_downloader(total_timeout=60).download(Request(base + "/trickle", timeout=0.3))


async def test_downloader_still_works_after_timeouts(make_downloader: MakeDownloader) -> None:
    server = LocalServer({"/trickle": trickle_handler, "/ok": ServerResponse(body="ok")})
    downloader = make_downloader(max_connections=2)
    async with server.running() as base:
        for _ in range(3):  # more timeouts than pooled connections: none may leak
            with pytest.raises(DownloadTimeout):
                await downloader.download(Request(base + "/trickle", timeout=0.1))
        with anyio.fail_after(4):
            assert (await downloader.download(Request(base + "/ok"))).body == b"ok"


async def test_a_cancelled_download_is_a_cancel_and_frees_its_connection(
    make_downloader: MakeDownloader,
) -> None:
    server = LocalServer({"/trickle": trickle_handler, "/ok": ServerResponse(body="ok")})
    downloader = make_downloader(max_connections=1)
    async with server.running() as base:
        for _ in range(2):  # a cancel, not a DownloadTimeout: move_on_after catches only its own cancel
            with anyio.move_on_after(0.1) as scope:
                await downloader.download(Request(base + "/trickle"))
            assert scope.cancelled_caught
        with anyio.fail_after(4):  # the one pooled connection came back
            assert (await downloader.download(Request(base + "/ok"))).body == b"ok"


# ---------------------------------------------------------------------------------------------- redirects


async def test_redirect_chain_is_followed_and_final_url_kept(make_downloader: MakeDownloader) -> None:
    server = LocalServer(
        {
            "/r1": redirect("/r2", 301),
            "/r2": redirect("r3", 302),  # relative
            "/r3": redirect("/final?x=1", 308),
            "/final": ServerResponse(body="done"),
        }
    )
    async with server.running() as base:
        response = await make_downloader().download(Request(base + "/r1"))
    assert (response.status, response.body, response.url) == (200, b"done", base + "/final?x=1")
    assert response.request.url == base + "/r1"
    assert [server.hits[p] for p in ("/r1", "/r2", "/r3", "/final")] == [1, 1, 1, 1]


async def test_redirect_loop_is_detected(make_downloader: MakeDownloader) -> None:
    server = LocalServer({"/a": redirect("/b"), "/b": redirect("/a")})
    async with server.running() as base:
        with pytest.raises(TooManyRedirects, match="loop") as info:
            await make_downloader().download(Request(base + "/a"))
    assert info.value.request is not None
    assert server.hits["/a"] == 2 and server.hits["/b"] == 1


async def test_redirect_to_itself_setting_a_cookie_is_not_a_loop(make_downloader: MakeDownloader) -> None:
    async def check(req: ServerRequest) -> ServerResponse:
        if "seen=1" in req.headers.get("cookie", ""):
            return ServerResponse(body="welcome")
        return redirect("/check", **{"Set-Cookie": "seen=1; Path=/"})

    server = LocalServer({"/check": check})
    async with server.running() as base:
        response = await make_downloader().download(Request(base + "/check"))
    assert response.body == b"welcome"


async def test_too_many_redirects(make_downloader: MakeDownloader) -> None:
    async def onwards(req: ServerRequest) -> ServerResponse:
        return redirect(f"/n{int(req.path[2:]) + 1}")

    server = LocalServer(fallback=onwards)
    async with server.running() as base:
        with pytest.raises(TooManyRedirects, match="max_redirects=3"):
            await make_downloader(max_redirects=3).download(Request(base + "/n0"))
    assert sum(server.hits.values()) == 4  # the request and 3 followed hops


async def test_max_redirects_zero_returns_the_redirect(make_downloader: MakeDownloader) -> None:
    server = LocalServer({"/a": redirect("/b")})
    async with server.running() as base:
        response = await make_downloader(max_redirects=0).download(Request(base + "/a"))
    assert (response.status, response.headers["location"], server.hits["/b"]) == (302, "/b", 0)


@pytest.mark.parametrize(
    ("status", "method", "expected_method", "keeps_body"),
    [
        (303, "POST", "GET", False),
        (303, "PUT", "GET", False),
        (301, "POST", "GET", False),
        (302, "POST", "GET", False),
        (302, "PUT", "PUT", True),
        (307, "POST", "POST", True),
        (308, "PUT", "PUT", True),
    ],
)
async def test_redirect_method_rewriting(
    make_downloader: MakeDownloader, status: int, method: str, expected_method: str, keeps_body: bool
) -> None:
    server = LocalServer({"/form": redirect("/done", status), "/done": echo_handler})
    async with server.running() as base:
        request = Request(base + "/form", method=method, form={"q": "books"})
        response = await make_downloader().download(request)
    done = server.requests[-1]
    assert (done.method, response.url) == (expected_method, base + "/done")
    if keeps_body:
        assert done.body == b"q=books"
        assert done.headers["content-type"] == "application/x-www-form-urlencoded"
    else:
        assert done.body == b""
        assert "content-type" not in done.headers
        assert done.headers.get("content-length", "0") == "0"


async def test_credentials_are_not_sent_to_another_host(make_downloader: MakeDownloader) -> None:
    other = LocalServer(fallback=echo_handler)
    async with other.running():
        # the same server under another host name is another host for credentials
        elsewhere = f"http://localhost:{other.port}/landing"
        server = LocalServer(
            {"/go": redirect(elsewhere), "/stay": redirect("/landing"), "/landing": echo_handler}
        )
        async with server.running() as base:
            downloader = make_downloader()
            headers = {"Authorization": "Bearer secret", "X-Keep": "1"}
            await downloader.download(Request(base + "/stay", headers=headers, cookies={"k": "v"}))
            await downloader.download(Request(base + "/go", headers=headers, cookies={"k": "v"}))
    [same_host] = [r for r in server.requests if r.path == "/landing"]
    assert (same_host.headers["authorization"], same_host.headers["cookie"]) == ("Bearer secret", "k=v")
    other_host = other.requests[-1]
    assert other_host.headers["x-keep"] == "1"
    assert "authorization" not in other_host.headers and "cookie" not in other_host.headers


async def test_redirect_bodies_are_skipped_whatever_their_size(make_downloader: MakeDownloader) -> None:
    server = LocalServer(
        {
            "/small": ServerResponse(302, body=b"s" * 100, headers={"Location": "/big"}),
            "/big": ServerResponse(302, body=b"b" * 500_000, headers={"Location": "/end"}),
            "/end": ServerResponse(body="end"),
        }
    )
    downloader = make_downloader(max_body_bytes=1000)  # the cap is for the final body only
    async with server.running() as base:
        for _ in range(3):
            assert (await downloader.download(Request(base + "/small"))).body == b"end"


async def test_redirect_to_a_non_http_url_fails(make_downloader: MakeDownloader) -> None:
    server = LocalServer({"/a": redirect("ftp://example.com/file")})
    async with server.running() as base:
        with pytest.raises(DownloadError, match="ftp://example.com/file"):
            await make_downloader().download(Request(base + "/a"))


@pytest.mark.parametrize(
    ("location", "problem"),
    [
        ("file:///etc/passwd", "which is not an http(s) URL"),
        ("ftp://127.0.0.1/x", "which is not an http(s) URL"),
        ("http://xn--zz.example/", "invalid Location"),  # no valid IDNA label: httpx refuses the host
        ("http://[::1", "invalid Location"),
    ],
)
async def test_a_redirect_that_cannot_be_followed_is_unfetchable(
    make_downloader: MakeDownloader, location: str, problem: str
) -> None:
    server = LocalServer({"/a": redirect(location)})
    async with server.running() as base:
        with pytest.raises(UnfetchableURL, match=re.escape(problem)) as info:
            await make_downloader().download(Request(base + "/a"))
    assert (info.value.url, info.value.retryable) == (location, False)
    assert location in str(info.value)
    assert server.hits["/a"] == 1


async def test_a_url_httpx_refuses_is_unfetchable(make_downloader: MakeDownloader) -> None:
    with pytest.raises(UnfetchableURL, match="cannot request GET http://xn--zz.example/") as info:
        await make_downloader().download(Request("http://xn--zz.example/"))
    assert info.value.url == "http://xn--zz.example/"


# ---------------------------------------------------------------------------------------------- bodies


@pytest.mark.parametrize(
    ("encoding", "compress"),
    [
        ("gzip", gzip.compress),
        ("deflate", zlib.compress),  # RFC: zlib-wrapped
        ("deflate", lambda data: zlib.compress(data)[2:-4]),  # raw deflate, as some servers send
        ("identity", lambda data: data),
    ],
)
async def test_compressed_bodies_are_decoded(
    make_downloader: MakeDownloader, encoding: str, compress: object
) -> None:
    assert callable(compress)
    page = b"<p>" + b"hello " * 2000 + b"</p>"
    server = LocalServer({"/z": ServerResponse(body=compress(page), headers={"Content-Encoding": encoding})})
    async with server.running() as base:
        response = await make_downloader().download(Request(base + "/z"))
    assert response.body == page


async def test_chunked_gzip_body_split_anywhere(make_downloader: MakeDownloader) -> None:
    page = bytes(range(256)) * 400
    packed = gzip.compress(page)

    async def handler(req: ServerRequest) -> ServerResponse:
        pieces = [packed[i : i + 7] for i in range(0, len(packed), 7)]
        return ServerResponse(chunks=pieces, headers={"Content-Encoding": "gzip"})

    server = LocalServer({"/z": handler})
    async with server.running() as base:
        assert (await make_downloader().download(Request(base + "/z"))).body == page


async def test_corrupt_gzip_is_a_download_error(make_downloader: MakeDownloader) -> None:
    server = LocalServer(
        {"/z": ServerResponse(body=b"not gzip at all", headers={"Content-Encoding": "gzip"})}
    )
    async with server.running() as base:
        with pytest.raises(DownloadError, match="cannot decode"):
            await make_downloader().download(Request(base + "/z"))


async def test_body_cap_from_content_length(make_downloader: MakeDownloader) -> None:
    server = LocalServer(
        {"/big": ServerResponse(body=b"x" * 5000), "/fits": ServerResponse(body=b"x" * 1000)}
    )
    downloader = make_downloader(max_body_bytes=1000)
    async with server.running() as base:
        assert len((await downloader.download(Request(base + "/fits"))).body) == 1000
        with pytest.raises(BodyTooLarge, match="max_body_bytes=1000"):
            await downloader.download(Request(base + "/big"))


async def test_body_cap_while_streaming(make_downloader: MakeDownloader) -> None:
    sent = 0

    async def endless() -> AsyncIterator[bytes]:
        nonlocal sent
        while True:
            sent += 4096
            yield b"y" * 4096
            await anyio.lowlevel.checkpoint()

    async def handler(req: ServerRequest) -> ServerResponse:
        return ServerResponse(chunks=endless())

    server = LocalServer({"/endless": handler})
    async with server.running() as base:
        with anyio.fail_after(5), pytest.raises(BodyTooLarge):
            await make_downloader(max_body_bytes=100_000).download(Request(base + "/endless"))


async def test_gzip_bomb_10mb_stops_at_the_cap(make_downloader: MakeDownloader) -> None:
    bomb = gzip.compress(bytes(10_000_000))
    assert len(bomb) < 20_000
    server = LocalServer({"/bomb": ServerResponse(body=bomb, headers={"Content-Encoding": "gzip"})})
    async with server.running() as base:
        with pytest.raises(BodyTooLarge, match="after decompression"):
            await make_downloader(max_body_bytes=1 << 20).download(Request(base + "/bomb"))


async def test_gzip_bomb_1gb_does_not_exhaust_memory(
    make_downloader: MakeDownloader, gzip_bomb: Callable[[int], bytes]
) -> None:
    bomb = gzip_bomb(1 << 30)
    assert len(bomb) < 2 << 20
    server = LocalServer({"/bomb": ServerResponse(body=bomb, headers={"Content-Encoding": "gzip"})})
    downloader = make_downloader(max_body_bytes=1 << 20)
    async with server.running() as base:
        tracemalloc.start()
        try:
            with pytest.raises(BodyTooLarge):
                await downloader.download(Request(base + "/bomb"))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 8 << 20, f"peak {peak / 2**20:.0f} MiB while refusing a 1 GiB bomb"


async def test_head_with_large_content_length_is_fine(make_downloader: MakeDownloader) -> None:
    async def head(req: ServerRequest) -> ServerResponse:
        return ServerResponse(raw=b"HTTP/1.1 200 OK\r\nContent-Length: 999999999\r\n\r\n")

    server = LocalServer({"/h": head})
    async with server.running() as base:
        response = await make_downloader(max_body_bytes=10).download(Request(base + "/h", method="HEAD"))
    assert (response.status, response.body) == (200, b"")


# ---------------------------------------------------------------------------------------------- cookies


def cookie_server() -> LocalServer:
    async def login(req: ServerRequest) -> ServerResponse:
        user = req.query.get("user", ["anon"])[0]
        return ServerResponse(body="ok", headers={"Set-Cookie": f"sid={user}; Path=/"})

    async def me(req: ServerRequest) -> ServerResponse:
        return ServerResponse(body=req.headers.get("cookie", "-"))

    return LocalServer({"/login": login, "/me": me})


async def test_cookies_set_by_a_response_are_sent_later(make_downloader: MakeDownloader) -> None:
    server = cookie_server()
    downloader = make_downloader()
    async with server.running() as base:
        assert (await downloader.download(Request(base + "/me"))).body == b"-"
        await downloader.download(Request(base + "/login?user=ann"))
        assert (await downloader.download(Request(base + "/me"))).body == b"sid=ann"
        both = await downloader.download(Request(base + "/me", cookies={"lang": "fr", "sid": "override"}))
    assert both.body == b"sid=override; lang=fr"
    assert downloader.cookies.get("sid") == "ann"


async def test_sessions_have_their_own_cookie_jars(make_downloader: MakeDownloader) -> None:
    server = cookie_server()
    downloader = make_downloader()
    ann, bob = downloader.session("ann"), downloader.session("bob")
    assert downloader.session("ann") is ann
    assert isinstance(ann, Downloader)
    async with server.running() as base:
        await ann.download(Request(base + "/login?user=ann"))
        await bob.download(Request(base + "/login?user=bob"))
        assert (await ann.download(Request(base + "/me"))).body == b"sid=ann"
        assert (await bob.download(Request(base + "/me"))).body == b"sid=bob"
        assert (await downloader.download(Request(base + "/me"))).body == b"-"
        async with ann:
            pass  # closing a session forgets its cookies, not the pool
        assert downloader.session("ann") is not ann
        assert (await downloader.session("ann").download(Request(base + "/me"))).body == b"-"
        assert (await bob.download(Request(base + "/me"))).body == b"sid=bob"


async def test_explicit_cookie_header_is_sent_as_is(make_downloader: MakeDownloader) -> None:
    server = cookie_server()
    downloader = make_downloader()
    async with server.running() as base:
        await downloader.download(Request(base + "/login?user=ann"))
        response = await downloader.download(Request(base + "/me", headers={"Cookie": "mine=1"}))
    assert response.body == b"mine=1"


# ---------------------------------------------------------------------------------------------- pooling


async def test_connections_are_reused(make_downloader: MakeDownloader) -> None:
    connections = 0
    server = LocalServer({"/": ServerResponse(body="x")})
    original = server._serve_connection

    async def counting(stream: object) -> None:
        nonlocal connections
        connections += 1
        await original(stream)  # type: ignore[arg-type]

    server._serve_connection = counting  # type: ignore[method-assign]
    downloader = make_downloader(max_connections=4)
    async with server.running() as base:
        async with anyio.create_task_group() as tg:
            for _ in range(40):
                tg.start_soon(downloader.download, Request(base + "/"))
    assert server.hits["/"] == 40
    assert connections <= 4


async def test_a_given_httpx_transport_is_used_and_closed() -> None:
    transport = httpx.AsyncHTTPTransport()
    server = LocalServer({"/": ServerResponse(body="via my transport")})
    async with server.running() as base:
        async with HttpxDownloader(transport=transport, name="mine") as downloader:
            assert downloader.name == "mine"
            assert (await downloader.download(Request(base + "/"))).body == b"via my transport"
    assert transport._pool.connections == []  # closed with the downloader


async def test_only_the_given_headers_are_sent(make_downloader: MakeDownloader) -> None:
    server = LocalServer(fallback=echo_handler)
    async with server.running() as base:
        downloader = make_downloader(headers={"X-Only": "1"})
        await downloader.download(Request(base + "/get"))
        await downloader.download(Request(base + "/post", method="POST", body=b"raw bytes"))
    get, post = server.requests
    assert sorted(get.headers) == ["accept-encoding", "host", "user-agent", "x-only"]
    assert sorted(post.headers) == ["accept-encoding", "content-length", "host", "user-agent", "x-only"]
    assert post.body == b"raw bytes"
