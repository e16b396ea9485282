"""Links of work that may have been parsed before are queued past dedup, whichever way the work comes back.

A parse adds its links to the seen set, then queues them; a worker that dies (or fails to queue) between
the two leaves them seen and unqueued, so the next parse of that page must queue them anyway.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from mocra_core import BackendUnavailable, MocraBuilder, on_item
from mocra_core.dedup import MemorySeenSet
from mocra_core.engine import _transient
from mocra_core.engine._frontier import REQUESTS, Frontier
from mocra_core.engine.parse._stage import ParseStage
from mocra_core.http import Request, Routing
from mocra_core.observe import Stats
from mocra_core.queue import Delivery, MemoryQueue
from mocra_core.testing import LocalServer

from .test_crawl import Item, LinkSpider, page

pytestmark = pytest.mark.anyio


def fail_first_publish_of(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    """The first publish of a request for `url` fails as if the broker were unreachable."""
    publish = MemoryQueue.publish
    failed = False

    async def flaky(self: MemoryQueue, topic: str, payloads: Sequence[Any], **kw: Any) -> None:
        nonlocal failed
        if not failed and topic == REQUESTS and any(p.request.url == url for p in payloads):
            failed = True
            raise BackendUnavailable("memory", "memory://", "connection refused")
        await publish(self, topic, payloads, **kw)

    monkeypatch.setattr(MemoryQueue, "publish", flaky)


async def test_a_request_parsed_before_whose_new_response_is_queued_still_queues_its_links(
    builder: MocraBuilder, server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # /p/0 is parsed directly (its request's delivery): its links go into the seen set, then queueing them
    # fails, and the request comes back. Its second download finds every parse worker busy, so its
    # response goes through the response queue, a new message on its first attempt: its links must
    # still be queued past dedup (the first attempt reached parse), or /p/1 and /p/2 are never crawled.
    server.route("/p/0", page("/p/1", "/p/2"))
    server.route("/p/1", page())
    server.route("/p/2", page())
    fail_first_publish_of(monkeypatch, server.url("/p/1"))
    monkeypatch.setattr(_transient, "RETRY_DELAY", 0.01)
    hand = ParseStage.hand

    async def busy_for_retries(self: ParseStage, delivery: Delivery) -> bool:
        return delivery.attempt == 1 and await hand(self, delivery)

    monkeypatch.setattr(ParseStage, "hand", busy_for_retries)
    items: list[Item] = []

    result: Any = await builder.spider(LinkSpider(server.url("/p/0")), on_item(items.append)).run_async()

    assert result.reason == "finished"
    assert result.stats.retries == 1  # the failed publish
    assert sorted(item.url for item in items) == [server.url(f"/p/{i}") for i in range(3)]
    assert (server.hits["/p/0"], server.hits["/p/1"], server.hits["/p/2"]) == (2, 1, 1)


class FailOnce(MemoryQueue):
    """A memory queue whose next publish fails as if the broker were unreachable (once `failing`)."""

    failing = False

    async def publish(self, topic: str, payloads: Sequence[object], **kw: Any) -> None:
        if self.failing:
            self.failing = False
            raise BackendUnavailable("memory", "memory://", "connection refused")
        await super().publish(topic, payloads, **kw)


async def test_a_redelivered_link_whose_publish_failed_is_queued_by_the_next_attempt() -> None:
    async with FailOnce() as queue:
        frontier = Frontier(queue, MemorySeenSet(), Stats())
        link = Request("http://example.com/0")
        await frontier.submit([link], Routing())  # seen and queued
        await queue.ack(await queue.consume(REQUESTS, group="download", wait=0))
        queue.failing = True
        with pytest.raises(BackendUnavailable):  # a redelivered parse that fails to queue its link
            await frontier.submit([link], Routing(), redelivered=True)
        assert await queue.pending(REQUESTS) == 0

        await frontier.submit([link], Routing(), redelivered=True)  # the parse's next attempt

        assert await queue.pending(REQUESTS) == 1
