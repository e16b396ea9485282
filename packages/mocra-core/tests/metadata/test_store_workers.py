"""Two workers of one job on Redis read the same store: each row is seeded once, and recorded once."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from mocra_core import CrawlResult, Ctx, Mocra, Response, Seeds, Spider
from mocra_core.testing import LocalServer, ServerResponse
from mocra_store import Store

pytestmark = pytest.mark.anyio

REDIS = "redis://127.0.0.1:6379/15"


class Visit(Spider[None]):
    name = "visit"

    def __init__(self, base: str) -> None:
        self.base = base

    async def start(self, seeds: Seeds) -> None:
        seeds.get(f"{self.base}/visit/{seeds.routing.account}")

    async def parse(self, response: Response, ctx: Ctx[None]) -> None:
        return None


@pytest.fixture
def job() -> Iterator[str]:
    import redis

    name = f"store{uuid.uuid4().hex[:12]}"
    yield name
    with redis.Redis(host="127.0.0.1", port=6379, db=15) as client:
        for key in client.scan_iter(match=f"mocra-{name}*", count=1000):
            client.delete(key)


async def test_two_workers_seed_each_row_once(store_url: str, server: LocalServer, job: str) -> None:
    names = [f"user{n}" for n in range(6)]
    async with Store.open(store_url) as store:
        await store.import_tenants(
            {
                "platforms": {"shop": {}},
                "modules": {"visit": {}},
                "accounts": {name: {} for name in names},
                "relations": [
                    {"module": "visit", "platform": "shop"},
                    *({"account": name, "platform": "shop"} for name in names),
                    *({"module": "visit", "account": name} for name in names),
                ],
            }
        )
    for name in names:
        server.route(f"/visit/{name}@shop", ServerResponse(body="ok"))
    results: list[CrawlResult] = []

    async def worker() -> None:
        settings = ("crawl.obey_robots=false", f"queue.url={REDIS}", f"crawl.job={job}")
        results.append(
            await Mocra.builder().set(*settings).store(store_url).spider(Visit(server.base_url)).run_async()
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(worker)
        tg.start_soon(worker)

    assert all(result.ok for result in results), [r.failures for r in results]
    assert dict(server.hits) == {f"/visit/{name}@shop": 1 for name in names}
    async with Store.open(store_url) as store:
        runs: list[Any] = await store.runs(module="visit")
    assert sorted(run.account for run in runs) == names  # one record per row: the worker that seeded it
    assert {run.status for run in runs} == {"succeeded"}
