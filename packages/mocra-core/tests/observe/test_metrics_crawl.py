"""`/metrics` of a real crawl: the engine's own `JobView`, scraped while the crawl runs and after it ended.

In one process (memory queue) and as a shared job on the Redis at 127.0.0.1:6379 (counts through the
job's coordination store).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import anyio
import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from mocra_core import Ctx, Mocra, Response, Spider, on_item
from mocra_core.control import JobRegistry, JobView
from mocra_core.engine import CrawlResult
from mocra_core.observe import scrape
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

pytestmark = pytest.mark.anyio

REDIS_URL = "redis://127.0.0.1:6379/15"
PAGES = 10


class LinkSpider(Spider[str]):
    """Emits each page's URL and follows its links."""

    name = "metered"

    def __init__(self, start: str) -> None:
        self.start_urls = [start]  # type: ignore[misc]

    async def parse(self, response: Response, ctx: Ctx[str]) -> None:
        ctx.emit(response.url)
        for href in response.links():
            ctx.follow(href)


@pytest.fixture(params=["memory", "redis"])
def backend(request: pytest.FixtureRequest) -> Iterator[Callable[[], list[str]]]:
    """Settings of a crawl in process, or of a fresh shared job on Redis (its keys deleted after)."""
    jobs: list[str] = []

    def settings() -> list[str]:
        if request.param == "memory":
            return []
        jobs.append(f"metrics{uuid.uuid4().hex[:12]}")
        return [f"queue.url={REDIS_URL}", f"crawl.job={jobs[-1]}"]

    yield settings
    if jobs:
        import redis

        with redis.Redis(host="127.0.0.1", port=6379, db=15) as client:
            for job in jobs:
                for key in client.scan_iter(match=f"mocra-{job}*", count=1000):
                    client.delete(key)


def page(*links: str) -> ServerResponse:
    return ServerResponse(
        body="<html><body>" + "".join(f'<a href="{h}">{h}</a>' for h in links) + "</body></html>"
    )


async def metrics(views: list[JobView]) -> dict[str, list[Sample]]:
    text = (await scrape(views, process=False)).decode()
    return {family.name: family.samples for family in text_string_to_metric_families(text)}


def value(m: dict[str, list[Sample]], family: str, name: str | None = None, **labels: str) -> float:
    found = [s for s in m[family] if s.name == (name or family) and labels.items() <= s.labels.items()]
    assert len(found) == 1, (family, labels, found)
    return found[0].value


async def test_a_crawl_scraped_while_it_runs_and_after_it_ended(backend: Callable[[], list[str]]) -> None:
    held, release = anyio.Event(), anyio.Event()

    async def hold(_: ServerRequest) -> ServerResponse:
        held.set()
        await release.wait()
        return page()

    server = LocalServer()
    server.route("/", page(*(f"/p{n}" for n in range(PAGES)), "/missing", "/hold"))
    for n in range(PAGES):
        server.route(f"/p{n}", page("/"))  # "/" again: a duplicate
    server.route("/missing", ServerResponse(404, "no"))
    server.route("/hold", hold)
    registry = JobRegistry()
    items: list[str] = []
    result: list[CrawlResult] = []
    others = PAGES + 2  # "/", the pages and "/missing": all answered while "/hold" is held

    async with server.running(), anyio.create_task_group() as group:
        builder = (
            Mocra.builder()
            .set("crawl.obey_robots=false", *backend())
            .registry(registry)
            .spider(LinkSpider(server.url("/")), on_item(items.append))
        )

        async def crawl() -> None:
            result.append(await builder.run_async())

        group.start_soon(crawl)
        with anyio.fail_after(20):
            await held.wait()
            (view,) = registry.views()
            while True:  # a shared job's counts reach its store once a second
                during = await metrics([view])
                if value(during, "mocra_responses", "mocra_responses_total") == others:
                    break
                await anyio.sleep(0.1)
        assert value(during, "mocra_job_up") == 1
        assert value(during, "mocra_job_state", state="active") == 1
        assert value(during, "mocra_job_control", control="running") == 1
        assert value(during, "mocra_workers") == 1
        assert value(during, "mocra_queue_pending_messages", topic="request") >= 1  # "/hold", leased
        assert value(during, "mocra_responses_by_status", "mocra_responses_by_status_total", code="404") == 1
        latency = "mocra_download_latency_seconds"
        assert value(during, latency, latency + "_count") == view.stats.responses == others
        release.set()

    (done,) = result
    assert done.reason == "finished"
    after = await metrics(registry.views())
    assert value(after, "mocra_job_state", state="stopped") == 1
    assert value(after, "mocra_responses", "mocra_responses_total") == done.stats.responses == others + 1
    assert value(after, "mocra_items", "mocra_items_total") == len(items) == others + 1
    assert value(after, "mocra_dropped", "mocra_dropped_total", reason="duplicate") >= PAGES
    domains = {s.labels["domain"]: s.value for s in after["mocra_domain_responses"]}
    assert domains == {"127.0.0.1": others + 1}
    assert value(after, "mocra_response_bytes", "mocra_response_bytes_total") == done.stats.bytes
