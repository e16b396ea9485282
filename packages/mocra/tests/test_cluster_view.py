"""The admin view of a job on a cluster: `/api/v1/cluster`'s data comes from the running control plane."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import anyio
import pytest

from mocra import Ctx, Mocra, Response, Spider
from mocra_cluster import ClusterConfig
from mocra_core.control import ClusterNode, JobRegistry

from .tree_crawl import NATS_URL, free_addr, fresh_job, serving, tree_page

pytestmark = pytest.mark.anyio


class Tree(Spider[None]):
    name = "tree"

    def __init__(self, start: str) -> None:
        self.start_urls = (start,)  # type: ignore[misc]

    async def parse(self, response: Response, ctx: Ctx[None]) -> None:
        for href in response.links():
            ctx.follow(href)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def job() -> Iterator[str]:
    with fresh_job(NATS_URL) as name:  # its streams are deleted afterwards
        yield name


async def test_a_cluster_jobs_view_names_its_nodes(tmp_path: pathlib.Path, job: str) -> None:
    addr = free_addr()
    registry = JobRegistry()
    seen: list[ClusterNode] = []
    with serving(tree_page(60, 0.05)) as site:
        builder = (
            Mocra.builder()
            .set("crawl.obey_robots=false", f"queue.url={NATS_URL}", f"crawl.job={job}")
            .cluster(ClusterConfig.bootstrap("n1", addr, tmp_path / "n1", password="pw"))
            .registry(registry)
            .spider(Tree(site.url("/p/0")))
        )

        async def watch() -> None:
            with anyio.fail_after(30):
                while not seen:
                    for view in registry.views():
                        seen.extend((await view.snapshot()).cluster)
                    await anyio.sleep(0.1)

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            result = await builder.run_async()
    assert result.reason == "finished", result
    (node,) = seen
    assert (node.id, node.role) == ("n1", "leader")
    assert node.term >= 1 and node.partitions and node.heartbeat > 0
