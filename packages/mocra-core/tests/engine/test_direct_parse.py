"""Direct parse: a downloaded response goes straight to a parse worker, as the request's delivery."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import msgspec
import pytest

from mocra_core import MocraBuilder, on_item
from mocra_core.engine._feeder import Feeder
from mocra_core.engine.parse._lanes import ParseLanes
from mocra_core.http import Response
from mocra_core.modules import Ctx
from mocra_core.queue import Delivery, MemoryQueue
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse
from mocra_core.topics import response_topic

from .test_crawl import Item, LinkSpider, page
from .test_module_lanes import PARSE_WORKERS, SLOW_PAGES, SlowSink, lanes_builder, site, slow

pytestmark = pytest.mark.anyio


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The topics the engine publishes to, one entry per publish call."""
    topics: list[str] = []
    publish = MemoryQueue.publish

    async def spy(self: MemoryQueue, topic: str, payloads: Sequence[object], **kw: Any) -> None:
        topics.append(topic)
        await publish(self, topic, payloads, **kw)

    monkeypatch.setattr(MemoryQueue, "publish", spy)
    return topics


def chain(server: LocalServer, n: int) -> None:
    for i in range(n):
        server.route(f"/p/{i}", page(*([f"/p/{i + 1}"] if i + 1 < n else [])))


async def test_responses_skip_the_response_queue(
    builder: MocraBuilder, server: LocalServer, published: list[str]
) -> None:
    chain(server, 5)
    items: list[Item] = []

    result: Any = await builder.spider(LinkSpider(server.url("/p/0")), on_item(items.append)).run_async()

    assert result.reason == "finished" and result.ok
    assert sorted(item.url for item in items) == [server.url(f"/p/{i}") for i in range(5)]
    assert "request" in published
    assert not any(topic.startswith("response") for topic in published)


async def test_direct_parse_off_sends_responses_through_the_queue(
    builder: MocraBuilder, server: LocalServer, published: list[str]
) -> None:
    chain(server, 5)
    items: list[Item] = []

    result: Any = await (
        builder.set("crawl.direct_parse=false")
        .spider(LinkSpider(server.url("/p/0")), on_item(items.append))
        .run_async()
    )

    assert result.reason == "finished" and result.ok
    assert len(items) == 5
    assert published.count(response_topic("links")) == 5


def flaky_once(response: ServerResponse) -> Any:
    """A handler answering 503 the first time, then `response`."""
    calls = 0

    async def handle(request: ServerRequest) -> ServerResponse:
        nonlocal calls
        calls += 1
        return ServerResponse(status=503) if calls == 1 else response

    return handle


async def test_a_download_retry_does_not_queue_seen_links_again(
    builder: MocraBuilder, server: LocalServer
) -> None:
    # /p/2 fails once: its second attempt is a redelivery that never reached parse before, so the links
    # it shares with the others (/p/0, /p/1, seen already) must not be queued past dedup
    server.route("/p/0", page("/p/1", "/p/2"))
    server.route("/p/1", page("/p/0", "/p/2"))
    server.route("/p/2", flaky_once(page("/p/0", "/p/1")))
    items: list[Item] = []

    result: Any = await builder.spider(LinkSpider(server.url("/p/0")), on_item(items.append)).run_async()

    assert result.reason == "finished" and result.ok
    assert result.stats.retries == 1
    assert sorted(item.url for item in items) == [server.url(f"/p/{i}") for i in range(3)]
    assert (server.hits["/p/0"], server.hits["/p/1"], server.hits["/p/2"]) == (1, 1, 2)


class FailingSpider(LinkSpider):
    async def parse(self, response: Response, ctx: Ctx[Item]) -> None:
        if response.url.endswith("/p/1"):
            raise RuntimeError("selector broke")
        await super().parse(response, ctx)


@pytest.mark.parametrize(("direct", "topic"), [("true", "request"), ("false", "response-links")])
async def test_a_failed_parse_dead_letters_the_request_or_the_response(
    builder: MocraBuilder, server: LocalServer, direct: str, topic: str
) -> None:
    chain(server, 3)
    items: list[Item] = []

    result: Any = await (
        builder.set(f"crawl.direct_parse={direct}")
        .spider(FailingSpider(server.url("/p/0")), on_item(items.append))
        .run_async()
    )

    assert result.reason == "finished"
    assert [item.url for item in items] == [server.url("/p/0")]
    [failure] = result.failures
    assert failure.topic == topic  # direct: replaying it downloads the page again
    assert failure.url == server.url("/p/1")
    assert "selector broke" in failure.reason


async def test_a_handed_delivery_acks_the_message_it_replaces() -> None:
    handled: list[object] = []
    done = anyio.Event()

    async def handle(delivery: Delivery) -> None:
        handled.append(delivery.payload)
        await queue.ack([delivery])
        done.set()

    async with MemoryQueue() as queue:
        await queue.publish("request", ["https://example.com/"])
        [leased] = await queue.consume("request", group="download", wait=0)
        feeder = Feeder(queue, "response", "parse", lambda: False, wait=0.01)
        async with anyio.create_task_group() as tg:
            tg.start_soon(feeder.run, 1, handle)
            await anyio.sleep(0.01)
            assert await queue.pending("request") == 1
            with anyio.fail_after(5):
                assert await feeder.hand(msgspec.structs.replace(leased, payload="a response"))
                await done.wait()
            feeder.halt()
        assert handled == ["a response"]
        assert await queue.pending("request") == 0  # acking the handed delivery acked the request
        assert await queue.pending("response") == 0


async def test_hand_waits_for_a_free_worker_and_refuses_once_halted() -> None:
    release = anyio.Event()
    handled: list[object] = []

    async def handle(delivery: Delivery) -> None:
        handled.append(delivery.payload)
        await release.wait()

    async with MemoryQueue() as queue:
        feeder = Feeder(queue, "t", "g", lambda: False, wait=0.01)
        assert not await feeder.hand(Delivery("0", "t", "early", None, 0, 1, 0.0))  # not running yet
        async with anyio.create_task_group() as tg:
            tg.start_soon(feeder.run, 1, handle)
            await anyio.sleep(0.01)
            assert await feeder.hand(Delivery("1", "t", "a", None, 0, 1, 0.0))
            with anyio.move_on_after(0.1) as waiting:  # the one worker is busy: hand waits
                await feeder.hand(Delivery("2", "t", "b", None, 0, 1, 0.0))
            assert waiting.cancelled_caught
            assert not await feeder.hand(Delivery("2", "t", "b", None, 0, 1, 0.0), wait=False)  # or not
            feeder.halt()
            release.set()
        assert handled == ["a"]
        assert not await feeder.hand(Delivery("3", "t", "c", None, 0, 1, 0.0))


async def test_a_cancelled_feeder_hands_back_a_handed_delivery_no_worker_started() -> None:
    hold = anyio.Event()

    async def handle(delivery: Delivery) -> None:
        await hold.wait()

    async with MemoryQueue(visibility_timeout=3600) as queue:
        await queue.publish("request", ["x", "y"])
        first, second = await queue.consume("request", group="download", max_messages=2, wait=0)
        feeder = Feeder(queue, "response", "parse", lambda: False, wait=0.01)
        async with anyio.create_task_group() as tg:
            tg.start_soon(feeder.run, 1, handle)
            await anyio.sleep(0.01)
            assert await feeder.hand(first)  # the one worker holds it
            tg.start_soon(feeder.hand, second)  # waits: no worker is free
            await anyio.sleep(0.05)
            tg.cancel_scope.cancel()
        # `second` was never started: it is back at once, not after the hour-long visibility timeout
        again = await queue.consume("request", group="download", max_messages=2, wait=0)
        assert [d.payload for d in again] == ["y"]


async def test_a_busy_lane_gets_its_responses_through_its_topic(
    server: LocalServer, published: list[str]
) -> None:
    site(server)
    sink = SlowSink()

    result: Any = await lanes_builder("true").spider(slow(server), sink).run_async()

    assert result.ok and sorted(item["url"] for item in sink.items) == sorted(
        server.url(f"/slow/{i}") for i in range(SLOW_PAGES)
    )
    assert server.hits == {f"/slow/{i}": 1 for i in range(SLOW_PAGES)}
    # the lane's workers wait on the sink: the download workers queued pages (up to the lane's workers
    # at a time, see test_a_busy_lane_queues_as_many_responses_as_it_has_workers_then_waits)
    assert published.count(response_topic("slow")) >= PARSE_WORKERS
    assert "response" not in published


async def test_a_busy_lane_queues_as_many_responses_as_it_has_workers_then_waits() -> None:
    release = anyio.Event()

    async def handle(delivery: Delivery) -> None:
        await release.wait()

    def response(n: int) -> Delivery:
        return Delivery(str(n), "request", f"response {n}", None, 0, 1, 0.0)

    async with MemoryQueue() as queue:
        lanes = ParseLanes(queue, ["m"], lambda: False)
        async with anyio.create_task_group() as tg:
            tg.start_soon(lanes.run, 2, handle)
            await anyio.sleep(0.01)
            assert await lanes.hand("m", response(0))  # idle workers take the first two
            assert await lanes.hand("m", response(1))
            assert not await lanes.hand("m", response(2))  # busy: the caller queues two on the topic
            assert not await lanes.hand("m", response(3))
            with anyio.move_on_after(0.1) as waiting:  # then back-pressure: the hand-over waits
                await lanes.hand("m", response(4))
            assert waiting.cancelled_caught
            lanes.halt()
            release.set()
