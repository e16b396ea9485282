"""RobotsPolicy against a real local server through a real downloader."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import pytest

from mocra_core.download import HttpxDownloader, RobotsPolicy, origin_of
from mocra_core.http import Request
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.anyio

ROBOTS = """\
User-agent: *
Disallow: /private
Allow: /private/ok
Crawl-delay: 2

User-agent: otherbot
Disallow: /
"""


@pytest.fixture
async def downloader() -> AsyncIterator[HttpxDownloader]:
    async with HttpxDownloader() as downloader:
        yield downloader


async def test_disallowed_paths_are_refused(downloader: HttpxDownloader) -> None:
    server = LocalServer({"/robots.txt": ServerResponse(body=ROBOTS, headers={"Content-Type": "text/plain"})})
    robots = RobotsPolicy(downloader, user_agent=downloader.settings.user_agent)
    async with server.running() as base:
        assert await robots.allowed(Request(base + "/shop/1"))
        assert not await robots.allowed(Request(base + "/private/x"))
        assert await robots.allowed(Request(base + "/private/ok"))
        assert await robots.allowed(Request(base + "/robots.txt"))
        assert robots.crawl_delay(base) == 2.0
        assert robots.crawl_delay(base + "/any/page") == 2.0
        other = RobotsPolicy(downloader, user_agent="Mozilla/5.0 (compatible; OtherBot/1.0)")
        assert not await other.allowed(Request(base + "/shop/1"))
    assert server.hits["/robots.txt"] == 2  # once per policy


async def test_rules_for_our_own_token_win(downloader: HttpxDownloader) -> None:
    text = "User-agent: *\nAllow: /\n\nUser-agent: mocra\nDisallow: /no-mocra\n"
    server = LocalServer({"/robots.txt": ServerResponse(body=text)})
    robots = RobotsPolicy(downloader, user_agent="mocra/0.1.0")
    async with server.running() as base:
        assert not await robots.allowed(Request(base + "/no-mocra/1"))
        assert await robots.allowed(Request(base + "/yes"))


@pytest.mark.parametrize("status", [404, 401, 403, 410, 500, 503])
async def test_unavailable_or_failing_robots_allows_everything(
    downloader: HttpxDownloader, status: int
) -> None:
    server = LocalServer({"/robots.txt": ServerResponse(status, body="User-agent: *\nDisallow: /")})
    robots = RobotsPolicy(downloader, user_agent="mocra")
    async with server.running() as base:
        assert await robots.allowed(Request(base + "/anything"))
        assert await robots.allowed(Request(base + "/else"))
        assert robots.crawl_delay(base) is None
    assert server.hits["/robots.txt"] == 1  # the outcome is cached


async def test_network_error_allows_everything(downloader: HttpxDownloader, closed_port: int) -> None:
    robots = RobotsPolicy(downloader, user_agent="mocra")
    assert await robots.allowed(Request(f"http://127.0.0.1:{closed_port}/x"))


async def test_concurrent_callers_share_one_fetch(downloader: HttpxDownloader) -> None:
    async def slow_robots(req: ServerRequest) -> ServerResponse:
        await anyio.sleep(0.05)
        return ServerResponse(body="User-agent: *\nDisallow: /no\n")

    server = LocalServer({"/robots.txt": slow_robots})
    robots = RobotsPolicy(downloader, user_agent="mocra")
    answers: dict[int, bool] = {}
    async with server.running() as base:

        async def ask(i: int) -> None:
            answers[i] = await robots.allowed(Request(base + ("/no/" if i % 2 else "/yes/") + str(i)))

        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(ask, i)
    assert server.hits["/robots.txt"] == 1
    assert answers == {i: i % 2 == 0 for i in range(20)}


async def test_a_cancelled_fetch_lets_the_next_caller_fetch(downloader: HttpxDownloader) -> None:
    calls = 0

    async def robots_txt(req: ServerRequest) -> ServerResponse:
        nonlocal calls
        calls += 1
        if calls == 1:
            await anyio.sleep(10)
        return ServerResponse(body="User-agent: *\nDisallow: /no\n")

    server = LocalServer({"/robots.txt": robots_txt})
    robots = RobotsPolicy(downloader, user_agent="mocra")
    async with server.running() as base:
        results: list[bool] = []

        async def waiter() -> None:
            results.append(await robots.allowed(Request(base + "/no/1")))

        async with anyio.create_task_group() as tg:
            with anyio.move_on_after(0.1):  # the first caller gives up while fetching
                tg.start_soon(waiter)
                await robots.allowed(Request(base + "/a"))
        assert results == [False]  # the waiter fetched it itself
    assert server.hits["/robots.txt"] == 2


async def test_origins_are_separate(downloader: HttpxDownloader) -> None:
    a = LocalServer({"/robots.txt": ServerResponse(body="User-agent: *\nDisallow: /\n")})
    b = LocalServer({"/robots.txt": ServerResponse(404)})
    robots = RobotsPolicy(downloader, user_agent="mocra")
    async with a.running() as base_a, b.running() as base_b:
        assert not await robots.allowed(Request(base_a + "/x"))
        assert await robots.allowed(Request(base_b + "/x"))  # same host, another port: another origin


def test_origin_of() -> None:
    assert origin_of("http://Example.com:80/a") == "http://example.com"
    assert origin_of("https://example.com:8443/a") == "https://example.com:8443"
    assert origin_of("http://[::1]:8000/x") == "http://[::1]:8000"
