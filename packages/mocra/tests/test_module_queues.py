"""`mocra status` and `mocra dlq` know a job's per-module response queues (and the legacy `response` one)."""

from __future__ import annotations

import io
import pathlib
import uuid
from typing import Any

import anyio
import pytest
import redis

from mocra._dlq import list_dead_letters, replay_dead_letters
from mocra._job_queues import BrokerQueues, JobDirQueues
from mocra._status import print_status
from mocra_core import Ctx, Mocra, Request, Response, Spider
from mocra_core.config import Settings
from mocra_core.engine import EngineCodec
from mocra_core.http import Routed, Routing
from mocra_core.modules import SPIDER_NODE
from mocra_core.queue import LmdbQueue, open_queue
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse
from mocra_core.topics import RESPONSES, response_topic

REDIS_URL = "redis://127.0.0.1:6379/15"


class Pages(Spider[dict[str, Any]]):
    """One item per start URL; a page whose path ends in `/bad` breaks the parse."""

    def __init__(self, name: str, *start: str) -> None:
        self.name = name  # type: ignore[misc]
        self.start_urls = start  # type: ignore[misc]

    async def parse(self, response: Response, ctx: Ctx[dict[str, Any]]) -> None:
        if response.url.endswith("/bad"):
            raise RuntimeError("selector broke")
        ctx.emit({"url": response.url})


def crawl(site: LocalServer, *settings: str) -> Any:
    """Two spiders, `books.eu` with a page its parse fails on; responses through their queues."""
    return (
        Mocra.builder()
        .set("crawl.obey_robots=false", "crawl.direct_parse=false", *settings)
        .spider(Pages("books.eu", site.url("/b/1"), site.url("/b/bad")))
        .spider(Pages("news", site.url("/n/1")))
        .run()
    )


async def any_page(request: ServerRequest) -> ServerResponse:
    return ServerResponse(body="<p>page</p>")


@pytest.fixture
def site() -> Any:
    server = LocalServer(fallback=any_page)
    with server.run_in_thread():
        yield server


def test_status_and_dlq_of_a_job_dir_show_each_module_response_queue(
    site: LocalServer, tmp_path: pathlib.Path
) -> None:
    job = str(tmp_path / "job")
    result = crawl(site, f"crawl.job_dir={job!r}")
    assert result.dead_letters == 1 and result.failures[0].topic == response_topic("books.eu")
    queues = JobDirQueues(job)

    out = io.StringIO()
    counts = print_status(queues, stream=out)
    lines = out.getvalue().splitlines()
    assert [line.split() for line in lines[2:7]] == [
        ["task", "0", "0"], ["request", "0", "0"], ["response", "0", "1"],
        ["books.eu", "0", "1"], ["news", "0", "0"],
    ]  # fmt: skip
    assert counts[response_topic("books.eu")] == (0, 1)

    out = io.StringIO()
    assert list_dead_letters(queues, limit=10, stream=out) == 1
    assert out.getvalue().startswith(f"{response_topic('books.eu')}\t")
    assert "selector broke" in out.getvalue()

    out = io.StringIO()
    assert replay_dead_letters(queues, topics=["response"], stream=out) == 1
    out = io.StringIO()
    print_status(queues, stream=out)
    assert "1 messages left" in out.getvalue()


def test_status_of_a_broker_job_counts_its_legacy_response_queue(site: LocalServer) -> None:
    job = f"mq{uuid.uuid4().hex[:12]}"
    try:
        result = crawl(site, f"queue.url={REDIS_URL!r}", f"crawl.job={job!r}")
        assert result.dead_letters == 1

        async def leave_a_legacy_response() -> None:
            url = site.url("/n/old")
            old = Response(url, 200, [], b"<p>old</p>", Request(url), routing=Routing(f"news/{SPIDER_NODE}"))
            async with open_queue(REDIS_URL, codec=EngineCodec(), namespace=f"mocra-{job}") as queue:
                await queue.publish(RESPONSES, [old])

        anyio.run(leave_a_legacy_response)
        settings = Settings.from_mapping({"queue": {"url": REDIS_URL}})
        out = io.StringIO()
        counts = print_status(BrokerQueues(settings, job), stream=out)
        assert counts[RESPONSES] == (1, 0) and counts[response_topic("books.eu")] == (0, 1)
        assert "2 messages left" not in out.getvalue() and "1 messages left" in out.getvalue()
    finally:
        client = redis.Redis.from_url(REDIS_URL)
        for key in client.scan_iter(match=f"mocra-{job}*", count=1000):
            client.delete(key)
        client.close()


def test_a_broker_job_read_without_its_coordination_store_says_so(site: LocalServer) -> None:
    settings = Settings.from_mapping({"queue": {"url": "nats://127.0.0.1:4222"}})
    out = io.StringIO()
    print_status(BrokerQueues(settings, f"mq{uuid.uuid4().hex[:12]}"), stream=out)
    assert "modules of job" in out.getvalue() and "coordination.url" in out.getvalue()


def test_a_legacy_job_dir_lists_its_response_queue(tmp_path: pathlib.Path) -> None:
    job = tmp_path / "job"
    (job / "state").mkdir(parents=True)  # a job dir an earlier mocra wrote

    async def leave() -> None:
        async with LmdbQueue(str(job / "queue"), codec=EngineCodec()) as queue:
            await queue.publish(RESPONSES, [Routed(Request("https://example.com/"), Routing("news/spider"))])

    anyio.run(leave)
    out = io.StringIO()
    counts = print_status(JobDirQueues(str(job)), stream=out)
    assert counts == {"task": (0, 0), "request": (0, 0), RESPONSES: (1, 0)}
    assert "1 messages left" in out.getvalue()
