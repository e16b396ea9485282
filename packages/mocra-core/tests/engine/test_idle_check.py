"""The run ends only when nothing is pending anywhere, even when `pending` is slow (a broker round trip)."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from mocra_core import MocraBuilder, on_item
from mocra_core.engine import _plan
from mocra_core.engine._activity import ActivityQueue
from mocra_core.queue import MemoryQueue
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

from .test_crawl import Item, LinkSpider, page

pytestmark = pytest.mark.anyio

PAGES = 100


class SlowPendingQueue(MemoryQueue):
    """A memory queue whose `pending` takes a while, as a broker's does (one round trip per topic)."""

    async def pending(self, topic: str) -> int:
        await anyio.sleep(0.002)
        count = await super().pending(topic)
        await anyio.sleep(0.002)
        return count


async def test_a_chain_of_pages_is_crawled_to_its_end_with_a_slow_pending(
    builder: MocraBuilder, server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # each page links only to the next: the crawl's only work moves response -> request at every step,
    # which is when a check reading the topics one by one can see nothing anywhere
    async def slow_page(request: ServerRequest) -> ServerResponse:
        n = int(request.path.rsplit("/", 1)[1])
        await anyio.sleep(0.005)  # the idle check runs many times during the crawl
        return page(*([f"/p/{n + 1}"] if n + 1 < PAGES else []))

    for n in range(PAGES):
        server.route(f"/p/{n}", slow_page)
    monkeypatch.setattr(_plan.BackendPlan, "make_queue", lambda *_args: SlowPendingQueue())
    items: list[Item] = []

    result = await builder.spider(LinkSpider(server.url("/p/0")), on_item(items.append)).run_async()

    assert result.reason == "finished"
    assert len(items) == PAGES


async def test_activity_queue_sees_writes_during_a_read() -> None:
    async with ActivityQueue(MemoryQueue()) as queue:
        mark = queue.quiet()
        assert mark is not None and queue.unchanged(mark)
        await queue.publish("t", ["x"])
        assert not queue.unchanged(mark)
        [delivery] = await queue.consume("t", group="g", wait=0)
        mark = queue.quiet()
        assert mark is not None and queue.unchanged(mark)  # a lease moves nothing out of `pending`
        async with anyio.create_task_group() as tg:
            tg.start_soon(queue.ack, [delivery])
            await anyio.lowlevel.checkpoint()
            assert queue.quiet() is None or not queue.unchanged(mark)
        assert not queue.unchanged(mark)
        assert await queue.pending("t") == 0
