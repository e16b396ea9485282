"""`download(request, hop=...)` of each built-in downloader: every redirect hop is asked about first."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from mocra_core import BodyTooLarge, HopRefused, Request
from mocra_core.download import Hop, checks_hops
from mocra_core.testing import LocalServer, ServerResponse

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from conftest import MakeDownloader
    from mocra_core.download import (
        AiohttpDownloader,
        AiohttpSession,
        HopCheckingDownloader,
        HttpxDownloader,
        HttpxSession,
    )

    def _fits(
        downloader: HttpxDownloader, session: HttpxSession, native: AiohttpDownloader, view: AiohttpSession
    ) -> list[HopCheckingDownloader]:
        return [downloader, session, native, view]  # mypy --strict proves they implement the protocol


pytestmark = pytest.mark.anyio


@pytest.fixture
async def site() -> AsyncIterator[LocalServer]:
    server = LocalServer(
        {
            "/go": ServerResponse(302, headers={"Location": "/mid"}),
            "/mid": ServerResponse(301, headers={"Location": "/end"}),
            "/end": ServerResponse(body="end"),
            "/form": ServerResponse(303, headers={"Location": "/end"}),
        }
    )
    async with server.running():
        yield server


async def test_each_hop_is_asked_about_with_its_target_method_and_status(
    site: LocalServer, make_downloader: MakeDownloader
) -> None:
    asked: list[Hop] = []

    async def follow(hop: Hop) -> str | None:
        asked.append(hop)
        return None

    async with make_downloader() as downloader:
        response = await downloader.download(Request(site.url("/go")), hop=follow)
        posted = await downloader.download(Request(site.url("/form"), method="POST", body=b"a=1"), hop=follow)

    assert (response.url, response.body) == (site.url("/end"), b"end")
    assert posted.url == site.url("/end")
    assert asked == [
        Hop(site.url("/mid"), "GET", None, 302),
        Hop(site.url("/end"), "GET", None, 301),
        Hop(site.url("/end"), "GET", None, 303),  # a 303 turns the POST into a body-less GET
    ]


async def test_a_refused_hop_is_not_sent(site: LocalServer, make_downloader: MakeDownloader) -> None:
    async def refuse_end(hop: Hop) -> str | None:
        return "duplicate" if hop.url.endswith("/end") else None

    request = Request(site.url("/go"))
    async with make_downloader() as downloader:
        with pytest.raises(HopRefused) as caught:
            await downloader.download(request, hop=refuse_end)
        session = downloader.session("alice")
        with pytest.raises(HopRefused):
            await session.download(request, hop=refuse_end)

    assert (caught.value.url, caught.value.reason, caught.value.request) == (
        site.url("/end"),
        "duplicate",
        request,
    )
    assert not caught.value.retryable
    assert site.hits["/mid"] == 2
    assert site.hits["/end"] == 0


async def test_the_downloaders_are_known_to_check_hops(
    site: LocalServer, make_downloader: MakeDownloader
) -> None:
    async with make_downloader() as downloader:
        assert checks_hops(downloader)
        assert checks_hops(downloader.session("alice"))


async def test_a_body_cut_at_the_cap_says_how_many_bytes_were_received(
    site: LocalServer, make_downloader: MakeDownloader
) -> None:
    site.route("/chunked", ServerResponse(chunks=[b"x" * 600] * 10))
    site.route("/declared", ServerResponse(body=b"x" * 6000))

    async with make_downloader(max_body_bytes=1000) as downloader:
        with pytest.raises(BodyTooLarge) as chunked:
            await downloader.download(Request(site.url("/chunked")))
        with pytest.raises(BodyTooLarge) as declared:
            await downloader.download(Request(site.url("/declared")))

    assert 1000 < chunked.value.received <= 6000
    assert declared.value.received == 0  # its Content-Length was over the cap: no body was read
