"""The development HTTP cache (`[http_cache]`, `CachedDownloader`) against a real server on 127.0.0.1."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import lmdb
import msgspec
import pytest

from mocra_core import Ctx, HopRefused, Mocra, Response, Spider, on_item
from mocra_core.backends.lmdb._http_cache import CachedResponse, CacheEntry, HttpCacheStore
from mocra_core.download import (
    AiohttpDownloader,
    CachedDownloader,
    HttpCacheSettings,
    HttpxDownloader,
    NotCached,
    build_downloader,
)
from mocra_core.download._protocol import Hop
from mocra_core.http import Request
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

if TYPE_CHECKING:
    import pathlib
    from collections.abc import AsyncIterator
    from typing import Any, Self

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def page(*links: str, title: str = "t") -> ServerResponse:
    anchors = "".join(f'<a href="{href}">{href}</a>' for href in links)
    return ServerResponse(body=f"<html><head><title>{title}</title></head><body>{anchors}</body></html>")


@pytest.fixture
async def server() -> AsyncIterator[LocalServer]:
    site = LocalServer(
        {
            "/": page("/a", "/b", "/moved", "/broken"),
            "/a": page("/b", title="A"),
            "/b": page(title="B"),
            "/moved": ServerResponse(301, headers={"Location": "/c"}),
            "/c": page(title="C"),
            "/broken": ServerResponse(500, "down"),
        }
    )
    async with site.running():
        yield site


class Item(msgspec.Struct):
    url: str
    status: int
    title: str


class Site(Spider[Item]):
    name = "site"

    def __init__(self, start: str) -> None:
        self.start_urls = [start]  # type: ignore[misc]

    async def parse(self, response: Response, ctx: Ctx[Item]) -> None:
        title = response.css_first("title")
        ctx.emit(Item(response.url, response.status, title.text() if title else ""))
        for href in response.links():
            ctx.follow(href)


async def crawl(server: LocalServer, *settings: str) -> list[Item]:
    items: list[Item] = []
    builder = Mocra.builder().set("retry.max_retries=0", *settings)
    result = await builder.spider(Site(server.url("/")), on_item(items.append)).run_async()
    assert result.reason == "finished"
    return sorted(items, key=lambda item: item.url)


async def test_a_second_run_is_answered_from_the_cache(server: LocalServer, tmp_path: pathlib.Path) -> None:
    on = ("http_cache.enabled=true", f"http_cache.dir={tmp_path / 'cache'}")
    first = await crawl(server, *on)
    hits = dict(server.hits)
    assert hits == {"/robots.txt": 1, "/": 1, "/a": 1, "/b": 1, "/moved": 1, "/c": 1, "/broken": 1}

    server.hits.clear()
    second = await crawl(server, *on)

    assert second == first  # the same items, the redirect's final URL included
    assert dict(server.hits) == {"/broken": 1}  # a status the crawl retries is not stored
    assert [item.url for item in first if item.title == "C"] == [server.url("/c")]


async def test_the_default_directory_is_under_the_working_directory(
    server: LocalServer, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    await crawl(server, "http_cache.enabled=true")
    assert (tmp_path / ".mocra" / "httpcache" / "data.mdb").exists()


async def test_the_default_directory_is_in_the_job_dir(server: LocalServer, tmp_path: pathlib.Path) -> None:
    await crawl(server, "http_cache.enabled=true", f"crawl.job_dir={tmp_path / 'job'}")
    assert (tmp_path / "job" / "httpcache" / "data.mdb").exists()


async def test_off_by_default(server: LocalServer, tmp_path: pathlib.Path) -> None:
    await crawl(server)
    server.hits.clear()
    await crawl(server)
    assert server.hits["/"] == 1


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def cached(tmp_path: pathlib.Path) -> AsyncIterator[Any]:
    """`cached(inner=None, **settings)`: a `CachedDownloader` (over `inner` or the default downloader).

    All share the directory `tmp_path / "cache"` and the fake clock `cached.clock`.
    """
    opened: list[CachedDownloader] = []

    def make(inner: Any = None, **settings: Any) -> CachedDownloader:
        store = HttpCacheStore(str(tmp_path / "cache"))
        downloader = CachedDownloader(
            inner or build_downloader(), store, HttpCacheSettings(enabled=True, **settings), clock=clock
        )
        opened.append(downloader)
        return downloader

    clock = Clock()
    make.clock = clock  # type: ignore[attr-defined]
    yield make
    for downloader in opened:
        await downloader.aclose()


async def test_an_expired_entry_is_fetched_again(server: LocalServer, cached: Any) -> None:
    downloader = cached(expiration=60)
    await downloader.download(Request(server.url("/a")))
    cached.clock.now += 60
    await downloader.download(Request(server.url("/a")))
    assert server.hits["/a"] == 1
    cached.clock.now += 1
    await downloader.download(Request(server.url("/a")))
    await downloader.download(Request(server.url("/a")))
    assert server.hits["/a"] == 2  # fetched again, and stored afresh


async def test_ignored_statuses_are_not_stored(server: LocalServer, cached: Any) -> None:
    downloader = cached(ignore_statuses=[500])
    for _ in range(2):
        assert (await downloader.download(Request(server.url("/broken")))).status == 500
        await downloader.download(Request(server.url("/b")))
    assert (server.hits["/broken"], server.hits["/b"]) == (2, 1)


async def test_a_retried_status_is_not_stored_so_the_retry_reaches_the_site(
    server: LocalServer, tmp_path: pathlib.Path
) -> None:
    calls = 0

    async def flaky(_: ServerRequest) -> ServerResponse:
        nonlocal calls
        calls += 1
        return ServerResponse(503, "busy", headers={"Retry-After": "0"}) if calls == 1 else page(title="ok")

    server.route("/", flaky)
    items = await crawl(
        server, "http_cache.enabled=true", f"http_cache.dir={tmp_path}", "retry.max_retries=1"
    )
    assert [item.status for item in items if item.url == server.url("/")] == [200]


async def test_ignored_schemes_bypass_the_cache(server: LocalServer, cached: Any) -> None:
    downloader = cached(ignore_schemes=["http"])
    for _ in range(2):
        await downloader.download(Request(server.url("/b")))
    assert server.hits["/b"] == 2
    assert downloader.counts.stored == 0


@pytest.mark.parametrize("damage", [b"\x01not msgpack", b"\x09another format", b""])
async def test_a_damaged_entry_is_fetched_again(
    server: LocalServer, cached: Any, tmp_path: pathlib.Path, damage: bytes
) -> None:
    request = Request(server.url("/b"))
    first = cached()
    await first.download(request)
    await first.aclose()  # the run ends; the entry is damaged before the next one
    env = lmdb.open(str(tmp_path / "cache"))
    with env.begin(write=True) as txn:
        [key] = [k for k, _ in txn.cursor()]
        txn.put(key, damage)
    env.close()

    downloader = cached()
    response = await downloader.download(request)
    assert (response.status, server.hits["/b"]) == (200, 2)
    again = await downloader.download(request)
    assert (again.body, server.hits["/b"]) == (response.body, 2)  # stored afresh


async def test_ignore_missing_fails_instead_of_fetching(server: LocalServer, cached: Any) -> None:
    await cached().download(Request(server.url("/b")))
    offline = cached(ignore_missing=True)
    assert (await offline.download(Request(server.url("/b")))).status == 200
    with pytest.raises(NotCached, match=r"/a is not in the HTTP cache") as caught:
        await offline.download(Request(server.url("/a")))
    assert not caught.value.retryable
    assert server.hits["/a"] == 0


def refuse(*urls: str, seen: list[Hop] | None = None) -> Any:
    async def check(hop: Hop) -> str | None:
        if seen is not None:
            seen.append(hop)
        return "duplicate" if hop.url in urls else None

    return check


async def test_stored_redirect_hops_are_checked_again(server: LocalServer, cached: Any) -> None:
    downloader = cached()
    moved = Request(server.url("/moved"))
    first: list[Hop] = []
    response = await downloader.download(moved, hop=refuse(seen=first))
    assert response.url == server.url("/c")

    again: list[Hop] = []
    assert (await downloader.download(moved, hop=refuse(seen=again))).url == server.url("/c")
    assert again == first == [Hop(server.url("/c"), "GET", None, 301)]
    with pytest.raises(HopRefused, match="duplicate"):
        await downloader.download(moved, hop=refuse(server.url("/c")))
    assert server.hits["/moved"] == 1


async def test_a_refused_redirect_is_stored_and_fetched_once_let_through(
    server: LocalServer, cached: Any
) -> None:
    downloader = cached()
    moved = Request(server.url("/moved"))
    for _ in range(2):
        with pytest.raises(HopRefused):
            await downloader.download(moved, hop=refuse(server.url("/c")))
    assert (server.hits["/moved"], server.hits["/c"]) == (1, 0)

    assert (await downloader.download(moved, hop=refuse())).url == server.url("/c")
    assert (await downloader.download(moved, hop=refuse())).url == server.url("/c")
    assert (server.hits["/moved"], server.hits["/c"]) == (2, 1)


class Plain:
    """A downloader without the `hop` hook: the cache checks where it landed, as the engine would."""

    def __init__(self) -> None:
        self.name = "plain"
        self._inner = HttpxDownloader()

    async def download(self, request: Request) -> Response:
        return await self._inner.download(request)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


async def test_a_downloader_without_the_hop_hook_is_checked_where_it_landed(
    server: LocalServer, cached: Any
) -> None:
    downloader = cached(Plain())
    moved = Request(server.url("/moved"))
    with pytest.raises(HopRefused):
        await downloader.download(moved, hop=refuse(server.url("/c")))
    seen: list[Hop] = []
    assert (await downloader.download(moved, hop=refuse(seen=seen))).url == server.url("/c")
    assert seen == [Hop(server.url("/c"), "GET", None, 0)]
    assert server.hits["/moved"] == 1  # the refused download was stored with its response


@pytest.mark.parametrize("make", [AiohttpDownloader, HttpxDownloader])
async def test_sessions_have_their_own_entries_and_cookies_are_replayed(
    server: LocalServer, cached: Any, make: type[AiohttpDownloader | HttpxDownloader]
) -> None:
    server.route("/login", ServerResponse(body="ok", headers={"Set-Cookie": "sid=1; Path=/"}))
    downloader = cached(make())
    for _ in range(2):
        for key in ("alice", "bob"):
            await downloader.session(key).download(Request(server.url("/login")))
    assert server.hits["/login"] == 2

    inner = make()
    rerun = cached(inner)
    await rerun.session("alice").download(Request(server.url("/login")))
    assert server.hits["/login"] == 2
    assert inner.session("alice").cookies.get("sid") == "1"  # the cached Set-Cookie reached the jar


async def test_concurrent_stores_grow_the_map_without_failing(tmp_path: pathlib.Path) -> None:
    store = HttpCacheStore(str(tmp_path), map_size=256 << 10)  # fills after a few entries
    body = bytes(range(256)) * 200
    key = b"%d"

    async def one(n: int) -> None:
        await store.put(key % n, CacheEntry(1.0, [], CachedResponse(f"http://x/{n}", 200, [], body, 0.0)))
        await store.get(key % (n // 2))

    async with anyio.create_task_group() as tg:
        for n in range(200):
            tg.start_soon(one, n)
    got = [await store.get(key % n) for n in range(200)]
    await store.aclose()
    assert all(
        entry is not None and entry.response is not None and entry.response.body == body for entry in got
    )
