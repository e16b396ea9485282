"""One definition of each counter: `dead_lettered` is every message this run sent to a dead-letter queue."""

from __future__ import annotations

import pytest

from mocra_core import Ctx, MocraBuilder, Response, Spider
from mocra_core.testing import LocalServer, ServerResponse

pytestmark = pytest.mark.anyio


class Pages(Spider[None]):
    """Fetches its start URLs; the page `/bad` raises in parse."""

    name = "pages"

    def __init__(self, *start: str) -> None:
        self.start_urls = start  # type: ignore[misc]

    async def parse(self, response: Response, ctx: Ctx[None]) -> None:
        if response.url.endswith("/bad"):
            raise ValueError("cannot parse this page")
        ctx.emit({"url": response.url})


async def test_dead_letters_counted_by_the_run_match_the_dead_letter_queue(
    builder: MocraBuilder, server: LocalServer
) -> None:
    server.route("/ok", ServerResponse(body=b"fine"))
    server.route("/bad", ServerResponse(body=b"broken"))
    server.route("/busy", ServerResponse(503, body=b"later"))

    # the retry policy would try /busy 6 times; the queue dead-letters it at its second delivery
    result = await (
        builder.set("retry.max_retries=5", "queue.max_attempts=2")
        .spider(Pages(server.url("/ok"), server.url("/bad"), server.url("/busy")))
        .run_async()
    )

    assert result.dead_letters == 2
    assert result.stats.dead_lettered == 2  # the queue's own dead letter (at max_attempts) counts too
    assert result.stats.errors == 1  # the parse that raised; a server answering 503 is no error of ours
    assert result.stats.items == 1


async def test_errors_are_counted_by_kind_and_no_download_is_left_in_flight(
    builder: MocraBuilder, server: LocalServer
) -> None:
    server.route("/ok", ServerResponse(body=b"fine"))
    server.route("/bad", ServerResponse(body=b"broken"))
    engine = builder.spider(Pages(server.url("/ok"), server.url("/bad"))).build()
    result = await engine.run()
    assert result.stats.errors == 1
    assert dict(engine.stats.errors_by_kind) == {"parse": 1}
    assert engine.stats.in_flight == 0 and engine.stats.requests == 2
