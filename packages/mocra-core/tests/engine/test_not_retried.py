"""Errors a retry cannot fix go to the dead-letter queue at the first attempt; transient ones are retried."""

from __future__ import annotations

import pytest

from mocra_core import Ctx, MocraBuilder, Response, Spider
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

pytestmark = pytest.mark.anyio


class Fetch(Spider[None]):
    """Fetches its start URLs and emits nothing."""

    name = "fetch"

    def __init__(self, *start: str) -> None:
        self.start_urls = start  # type: ignore[misc]

    async def parse(self, response: Response, ctx: Ctx[None]) -> None:
        return None


def redirect(location: str) -> ServerResponse:
    return ServerResponse(302, headers={"Location": location})


async def next_hop(request: ServerRequest) -> ServerResponse:
    return redirect(f"/many/{int(request.path.rsplit('/', 1)[1]) + 1}")


# path requested, server hits of one download (per path), what the dead-letter reason must name
CASES = {
    "file": ("/to-file", {"/to-file": 1}, "'file:///etc/passwd', which is not an http(s) URL"),
    "ftp": ("/to-ftp", {"/to-ftp": 1}, "'ftp://127.0.0.1/x', which is not an http(s) URL"),
    "bad-location": ("/to-bad-host", {"/to-bad-host": 1}, "invalid Location 'http://xn--zz.example/'"),
    "loop": ("/loop", {"/loop": 2}, "redirect loop"),
    "many": ("/many/0", {f"/many/{n}": 1 for n in range(4)}, "more than max_redirects=3"),
    "too-large": ("/big", {"/big": 1}, "max_body_bytes"),
}


@pytest.mark.parametrize("case", CASES)
async def test_an_error_no_retry_can_fix_is_dead_lettered_after_one_download(
    builder: MocraBuilder, server: LocalServer, case: str
) -> None:
    path, hits, named = CASES[case]
    server.route("/to-file", redirect("file:///etc/passwd"))
    server.route("/to-ftp", redirect("ftp://127.0.0.1/x"))
    server.route("/to-bad-host", redirect("http://xn--zz.example/"))
    server.route("/loop", redirect("/loop"))
    server.fallback = next_hop
    server.route("/big", ServerResponse(body=b"x" * 4096))

    result = await (
        builder.set("retry.max_retries=3", "download.max_redirects=3", "download.max_body_bytes=1024")
        .spider(Fetch(server.url(path)))
        .run_async()
    )

    assert dict(server.hits) == hits  # one download, no retry
    assert (result.stats.requests, result.stats.retries) == (1, 0)
    [failure] = result.failures
    assert failure.attempt == 1
    assert named in failure.reason
    assert "not retryable" in failure.reason


async def test_a_url_that_cannot_be_sent_is_dead_lettered_at_once(builder: MocraBuilder) -> None:
    # a well-formed URL by `Request`'s check whose host is no valid IDNA name: httpx refuses to send it
    result = await builder.set("retry.max_retries=3").spider(Fetch("http://xn--zz.example/")).run_async()

    assert (result.stats.requests, result.stats.retries) == (1, 0)
    [failure] = result.failures
    assert failure.attempt == 1
    assert "cannot request GET http://xn--zz.example/" in failure.reason
    assert "not retryable" in failure.reason


async def test_a_refused_connection_is_still_retried(builder: MocraBuilder, server: LocalServer) -> None:
    server.route("/gone", redirect("http://127.0.0.1:9/"))  # the discard port: refused

    result = await builder.set("retry.max_retries=2").spider(Fetch(server.url("/gone"))).run_async()

    assert server.hits["/gone"] == 3
    assert result.stats.retries == 2
    [failure] = result.failures
    assert "after 3 attempts" in failure.reason
