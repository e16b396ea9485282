"""Redirect hops go through dedup and robots.txt like a follow; a body cut at the cap counts its bytes."""

from __future__ import annotations

import pytest

from mocra_core import Mocra, MocraBuilder, on_item
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

from .test_crawl import Item, LinkSpider, page

pytestmark = pytest.mark.anyio


def redirect(location: str) -> ServerResponse:
    return ServerResponse(302, headers={"Location": location})


def robots(*disallowed: str) -> ServerResponse:
    rules = "".join(f"Disallow: {path}\n" for path in disallowed)
    return ServerResponse(body="User-agent: *\n" + rules, headers={"Content-Type": "text/plain"})


def parsed(items: list[Item], path: str) -> int:
    return sum(1 for item in items if item.url.endswith(path))


async def test_a_page_linked_directly_first_then_through_a_redirect_is_parsed_once(
    builder: MocraBuilder, server: LocalServer
) -> None:
    server.route("/", page("/book/12", "/next"))
    server.route("/next", page("/go/12"))  # found only after /book/12 was queued
    server.route("/go/12", redirect("/book/12"))
    server.route("/book/12", page())
    items: list[Item] = []

    result = await builder.spider(LinkSpider(server.url("/")), on_item(items.append)).run_async()

    assert server.hits["/book/12"] == 1
    assert parsed(items, "/book/12") == 1
    assert server.hits["/go/12"] == 1
    assert result.stats.dropped["duplicate"] == 1
    assert (result.stats.errors, result.dead_letters) == (0, 0)
    assert result.ok


async def test_a_page_reached_through_a_redirect_first_then_linked_directly_is_parsed_once(
    builder: MocraBuilder, server: LocalServer
) -> None:
    server.route("/", page("/go/12"))
    server.route("/go/12", redirect("/book/12"))
    server.route("/book/12", page("/again"))
    server.route("/again", page("/book/12"))  # found only after /book/12 was reached through the hop
    items: list[Item] = []

    result = await builder.spider(LinkSpider(server.url("/")), on_item(items.append)).run_async()

    assert server.hits["/book/12"] == 1
    assert parsed(items, "/book/12") == 1
    assert [item.url for item in items if item.url.endswith("/book/12")] == [server.url("/book/12")]
    assert result.stats.dropped["duplicate"] == 1
    assert (result.stats.errors, result.dead_letters) == (0, 0)


async def test_a_redirect_back_to_the_requested_url_is_followed(
    builder: MocraBuilder, server: LocalServer
) -> None:
    """A cookie bounce (`/a` → `/set` → `/a`) returns to a URL the request itself holds: not a duplicate."""

    async def bounce(request: ServerRequest) -> ServerResponse:
        if "seen=1" in request.headers.get("cookie", ""):
            return page()
        return redirect("/set")

    server.route("/a", bounce)
    server.route("/set", ServerResponse(302, headers={"Location": "/a", "Set-Cookie": "seen=1; Path=/"}))
    items: list[Item] = []

    result = await builder.spider(LinkSpider(server.url("/a")), on_item(items.append)).run_async()

    assert [item.url for item in items] == [server.url("/a")]
    assert server.hits["/a"] == 2
    assert result.stats.dropped.get("duplicate", 0) == 0
    assert result.ok


async def test_a_redirect_to_a_path_robots_txt_disallows_is_not_fetched(server: LocalServer) -> None:
    server.route("/robots.txt", robots("/private/"))
    server.route("/", page("/go"))
    server.route("/go", redirect("/private/secret.html"))
    server.route("/private/secret.html", page())
    items: list[Item] = []

    result = await Mocra.builder().spider(LinkSpider(server.url("/")), on_item(items.append)).run_async()

    assert server.hits["/private/secret.html"] == 0
    assert parsed(items, "/private/secret.html") == 0
    assert result.stats.dropped["robots"] == 1
    assert (result.stats.errors, result.dead_letters) == (0, 0)


async def test_a_redirect_to_a_new_host_fetches_and_obeys_its_robots_txt(server: LocalServer) -> None:
    other = LocalServer()
    async with other.running():
        server.route("/robots.txt", robots())
        other.route("/robots.txt", robots("/private/"))
        server.route("/", page("/away/private", "/away/public"))
        server.route("/away/private", redirect(other.url("/private/x.html")))
        server.route("/away/public", redirect(other.url("/public.html")))
        other.route("/private/x.html", page())
        other.route("/public.html", page())
        items: list[Item] = []

        result = await Mocra.builder().spider(LinkSpider(server.url("/")), on_item(items.append)).run_async()

    assert other.hits["/robots.txt"] == 1
    assert other.hits["/private/x.html"] == 0
    assert other.hits["/public.html"] == 1
    assert parsed(items, "/public.html") == 1
    assert result.stats.dropped["robots"] == 1
    assert (result.stats.errors, result.dead_letters) == (0, 0)


async def test_a_request_retried_after_its_hop_still_gets_its_page(
    builder: MocraBuilder, server: LocalServer
) -> None:
    """The retry re-reaches the hop target its first attempt marked seen: that is not a duplicate."""
    calls = 0

    async def flaky(_: ServerRequest) -> ServerResponse:
        nonlocal calls
        calls += 1
        if calls == 1:
            return ServerResponse(503, "busy", headers={"Retry-After": "0"})
        return page("/again")

    server.route("/", page("/go/7"))
    server.route("/go/7", redirect("/book/7"))
    server.route("/book/7", flaky)
    server.route("/again", page("/book/7"))  # a later direct link to the hop target is still a duplicate
    items: list[Item] = []

    result = await builder.spider(LinkSpider(server.url("/")), on_item(items.append)).run_async()

    assert server.hits["/go/7"] == 2
    assert server.hits["/book/7"] == 2
    assert [(i.url, i.status) for i in items if i.url.endswith("/book/7")] == [(server.url("/book/7"), 200)]
    assert result.stats.retries == 1
    assert result.stats.dropped["duplicate"] == 1
    assert (result.stats.errors, result.dead_letters) == (0, 0)


async def test_bytes_received_include_a_body_cut_at_the_cap(
    builder: MocraBuilder, server: LocalServer
) -> None:
    home = page("/big")
    server.route("/", home)
    # chunked: no Content-Length announces the size, so the body is read until the cap cuts it
    server.route("/big", ServerResponse(chunks=[b"x" * 600] * 10))

    result = await builder.set("download.max_body_bytes=1000").spider(LinkSpider(server.url("/"))).run_async()

    assert result.dead_letters == 1
    home_bytes = len(home.encode().partition(b"\r\n\r\n")[2])
    assert home_bytes + 1000 < result.stats.bytes <= home_bytes + 6000
