"""Each module parses in its own lane: one module's slow sink does not stall another module's pages."""

from __future__ import annotations

import contextlib
import pathlib
import re
import time
import uuid
from collections.abc import Sequence
from typing import Any

import anyio
import nats
import nats.js.errors
import pytest
import redis

from mocra_core import Ctx, Mocra, MocraBuilder, Request, Response, Spider, on_item
from mocra_core.engine import EngineCodec
from mocra_core.http import Routing
from mocra_core.modules import SPIDER_NODE
from mocra_core.queue import LmdbQueue, QueueBackend, open_queue
from mocra_core.testing import LocalServer, ServerResponse
from mocra_core.topics import RESPONSES, module_of, response_topic

pytestmark = pytest.mark.anyio

FAST_PAGES = 600
SLOW_PAGES = 16
PARSE_WORKERS = 4
REDIS_URL = "redis://127.0.0.1:6379/15"
NATS_URL = "nats://127.0.0.1:4222"


class Pages(Spider[dict[str, Any]]):
    """One item per start URL."""

    def __init__(self, name: str, *start: str) -> None:
        self.name = name  # type: ignore[misc]
        self.start_urls = start  # type: ignore[misc]

    async def parse(self, response: Response, ctx: Ctx[dict[str, Any]]) -> None:
        ctx.emit({"module": self.name, "url": response.url})


class SlowSink:
    """A sink that takes a second per write (a slow database)."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.last = 0.0

    async def open(self) -> None:
        pass

    async def close(self) -> None:
        pass

    async def write(self, items: Sequence[object]) -> None:
        await anyio.sleep(1.0)
        self.items.extend(items)
        self.last = time.monotonic()


class Clock:
    """Records when each item reached the sink."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.last = 0.0

    def __call__(self, item: Any) -> None:
        self.items.append(item)
        self.last = time.monotonic()


def site(server: LocalServer) -> None:
    for i in range(FAST_PAGES):
        server.route(f"/fast/{i}", ServerResponse(body=f"<p>{i}</p>"))
    for i in range(SLOW_PAGES):
        server.route(f"/slow/{i}", ServerResponse(body=f"<p>{i}</p>"))


def lanes_builder(direct: str) -> MocraBuilder:
    return Mocra.builder().set(
        "crawl.obey_robots=false", f"crawl.parse_workers={PARSE_WORKERS}", f"crawl.direct_parse={direct}"
    )


def fast(server: LocalServer) -> Pages:
    return Pages("fast", *(server.url(f"/fast/{i}") for i in range(FAST_PAGES)))


def slow(server: LocalServer) -> Pages:
    return Pages("slow", *(server.url(f"/slow/{i}") for i in range(SLOW_PAGES)))


@pytest.mark.parametrize("direct", ["true", "false"])
async def test_a_slow_sink_does_not_stall_another_module(server: LocalServer, direct: str) -> None:
    site(server)
    alone = Clock()
    started = time.monotonic()
    result: Any = await lanes_builder(direct).spider(fast(server), on_item(alone)).run_async()
    alone_time = alone.last - started
    assert result.ok and len(alone.items) == FAST_PAGES

    beside = Clock()
    sink = SlowSink()
    started = time.monotonic()
    result = await (
        lanes_builder(direct).spider(slow(server), sink).spider(fast(server), on_item(beside)).run_async()
    )
    beside_time = beside.last - started

    assert result.ok and len(beside.items) == FAST_PAGES and len(sink.items) == SLOW_PAGES
    # the slow sink's writes take 7-8 s; the fast module (~2 s alone) keeps its pace meanwhile: it is done
    # before them (stalled, it would finish after them), in about its time alone (up to 2x: on a loaded
    # machine one run took 1.4x as long as the other)
    assert sink.last - started > 3.0
    assert beside.last < sink.last, (beside_time, sink.last - started)
    assert beside_time < 2 * alone_time, (beside_time, alone_time)


async def test_a_sink_shared_by_two_modules_gets_every_item_once(server: LocalServer) -> None:
    site(server)
    got: list[Any] = []
    shared = on_item(got.append)

    result: Any = await (
        lanes_builder("true")
        .spider(Pages("a", *(server.url(f"/fast/{i}") for i in range(50))), shared)
        .spider(Pages("b", *(server.url(f"/slow/{i}") for i in range(SLOW_PAGES))), shared)
        .run_async()
    )

    assert result.ok
    assert sorted((item["module"], item["url"]) for item in got) == sorted(
        [("a", server.url(f"/fast/{i}")) for i in range(50)]
        + [("b", server.url(f"/slow/{i}")) for i in range(SLOW_PAGES)]
    )


def legacy_response(server: LocalServer, path: str, module: str) -> Response:
    """A response as a version before lanes queued it: on the `response` topic, for any module."""
    url = server.url(path)
    routing = Routing(f"{module}/{SPIDER_NODE}")
    return Response(url, 200, [("Content-Type", "text/html")], b"<p>old</p>", Request(url), routing=routing)


@pytest.mark.parametrize("backend", ["job_dir", "redis", "nats"])
async def test_responses_left_in_the_legacy_topic_are_parsed(
    server: LocalServer, tmp_path: pathlib.Path, backend: str
) -> None:
    site(server)
    job = f"lanes{uuid.uuid4().hex[:12]}"
    if backend == "job_dir":
        builder = lanes_builder("true").job_dir(str(tmp_path / "job"))
        opened: QueueBackend = LmdbQueue(str(tmp_path / "job" / "queue"), codec=EngineCodec())
    else:
        url = REDIS_URL if backend == "redis" else NATS_URL
        builder = lanes_builder("true").set(
            f"queue.url={url!r}", f"coordination.url={REDIS_URL!r}", f"crawl.job={job!r}"
        )
        opened = open_queue(url, codec=EngineCodec(), namespace=f"mocra-{job}")
    async with opened as queue:
        await queue.publish(
            RESPONSES, [legacy_response(server, "/old/a", "a"), legacy_response(server, "/old/b", "b")]
        )
    items: list[Any] = []
    try:
        result: Any = await (
            builder.spider(Pages("a", server.url("/fast/1")), on_item(items.append))
            .spider(Pages("b", server.url("/fast/2")), on_item(items.append))
            .run_async()
        )
    finally:
        if backend != "job_dir":
            delete_keys(f"mocra-{job}")
        if backend == "nats":
            await delete_streams(f"mocra-{job}")

    assert result.ok
    assert sorted((item["module"], item["url"]) for item in items) == [
        ("a", server.url("/fast/1")), ("a", server.url("/old/a")),
        ("b", server.url("/fast/2")), ("b", server.url("/old/b")),
    ]  # fmt: skip
    assert "/old/a" not in server.hits  # parsed from the queue, not downloaded again


def delete_keys(prefix: str) -> None:
    client = redis.Redis.from_url(REDIS_URL)
    try:
        for key in client.scan_iter(match=f"{prefix}*", count=1000):
            client.delete(key)
    finally:
        client.close()


async def delete_streams(namespace: str) -> None:
    connection = await nats.connect(NATS_URL)
    try:
        for stream in (f"{namespace}-work", f"{namespace}-dlq"):
            with contextlib.suppress(nats.js.errors.NotFoundError):
                await connection.jetstream().delete_stream(stream)
    finally:
        await connection.close()


def test_module_topics_are_plain_and_distinct() -> None:
    names = ["books", "my_books", "books-eu", "books.eu", "books/eu", "Bücher", "a-2d-b", "a{b}", "a b"]
    topics = [response_topic(name) for name in names]
    assert len(set(topics)) == len(names)
    assert all(re.fullmatch(r"[A-Za-z0-9_-]+", topic) for topic in topics)
    assert [module_of(topic) for topic in topics] == names
