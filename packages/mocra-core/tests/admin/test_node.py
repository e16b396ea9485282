"""Real crawls with the admin API on: `builder.api()`, a `JobNode` taking `POST /api/v1/jobs`, bind errors."""

from __future__ import annotations

import functools
import inspect
import socket
from collections.abc import Callable
from typing import Any

import anyio
import httpx
import pytest

from mocra_core import ConfigError, Ctx, Mocra, Response, Spider, on_item
from mocra_core.admin import JobNode
from mocra_core.config import Settings
from mocra_core.engine import with_overrides
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

pytestmark = pytest.mark.anyio

KEY = "node-key"
AUTH = {"X-API-Key": KEY}


class Tree(Spider[dict[str, int]]):
    name = "tree"

    async def parse(self, response: Response, ctx: Ctx[dict[str, int]]) -> None:
        ctx.emit({"id": int(response.url.rsplit("/", 1)[1])})
        for href in response.links():
            ctx.follow(href)


def tree_site(pages: int, delay: float = 0.0) -> LocalServer:
    async def page(request: ServerRequest) -> ServerResponse:
        n = int(request.path.rsplit("/", 1)[1])
        if n >= pages:
            return ServerResponse(404, "no")
        await anyio.sleep(delay)
        links = "".join(f'<a href="/p/{k}">{k}</a>' for k in (2 * n + 1, 2 * n + 2) if k < pages)
        return ServerResponse(body=f"<html><body>{links}</body></html>")

    return LocalServer(fallback=page)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def wait_for(check: Callable[[], Any]) -> None:
    """Until `check()` (or what it returns, when awaitable) is true, for at most 20 s."""
    with anyio.fail_after(20):
        while True:
            done = check()
            if inspect.isawaitable(done):
                done = await done
            if done:
                return
            await anyio.sleep(0.05)


async def test_builder_api_serves_the_run_and_pauses_it() -> None:
    site = tree_site(120, delay=0.02)
    items: list[dict[str, int]] = []
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    async with site.running() as base:
        seeded = type("Tree", (Tree,), {"start_urls": (f"{base}/p/0",)})
        builder = (
            Mocra.builder()
            .spider(seeded(), on_item(items.append))
            .set("crawl.obey_robots=false", "crawl.concurrency=2", f'admin.keys=["{KEY}"]')
            .api(f"127.0.0.1:{port}")
        )
        outcome: dict[str, Any] = {}
        async with anyio.create_task_group() as group, httpx.AsyncClient(base_url=url) as api:

            async def run() -> None:
                outcome["result"] = await builder.run_async()

            group.start_soon(run)

            async def crawling() -> bool:
                try:
                    ready = await api.get("/ready")
                except httpx.TransportError:
                    return False
                return ready.status_code == 200 and site.hits.total() > 3

            await wait_for(crawling)
            snapshot = (await api.get("/api/v1/jobs/tree")).json()
            assert snapshot["job"] == "tree" and snapshot["state"] == "active"
            assert (await api.get("/api/v1/jobs")).json()[0]["job"] == "tree"
            assert (await api.post("/api/v1/jobs/tree/pause", headers=AUTH)).json() == {"control": "paused"}
            await anyio.sleep(0.5)  # in-flight downloads end
            held = site.hits.total()
            await anyio.sleep(1.0)
            assert site.hits.total() == held  # paused: no download started
            assert (await api.get("/api/v1/jobs/tree")).json()["control"] == "paused"
            assert (await api.post("/api/v1/jobs/tree/resume", headers=AUTH)).json() == {"control": "running"}
    result = outcome["result"]
    assert result.reason == "finished"
    assert sorted(item["id"] for item in items) == list(range(120))
    async with httpx.AsyncClient() as client:
        with pytest.raises(httpx.ConnectError):  # the server ended with the run
            await client.get(f"{url}/health")


async def test_a_port_in_use_is_an_error_naming_the_address_before_the_crawl() -> None:
    site = tree_site(3)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        async with site.running() as base:
            seeded = type("Tree", (Tree,), {"start_urls": (f"{base}/p/0",)})
            builder = Mocra.builder().spider(seeded()).set("crawl.obey_robots=false").api(f"127.0.0.1:{port}")
            with pytest.raises(
                ConfigError, match=f"cannot listen on 127.0.0.1:{port}: Address already in use"
            ):
                await builder.run_async()
    assert site.hits.total() == 0


def node_settings(**overrides: Any) -> Settings:
    return with_overrides(
        Settings(), {"crawl.obey_robots": False, "admin.keys": [KEY], "admin.rate": 100.0, **overrides}
    )


async def test_a_node_starts_jobs_on_post_and_drains() -> None:
    site = tree_site(30)
    items: dict[str, list[dict[str, int]]] = {}
    node = JobNode(
        [Tree()], settings=node_settings(), sink=lambda _, job: on_item(items.setdefault(job, []).append)
    )
    urls: list[str] = []
    async with site.running() as base, anyio.create_task_group() as group:
        group.start_soon(functools.partial(node.run, "127.0.0.1:0", on_listening=urls.append))
        await wait_for(lambda: urls)
        async with httpx.AsyncClient(base_url=urls[0], headers=AUTH) as api:
            assert (await api.get("/ready")).json() == {"state": "idle"}
            body = {"spider": "tree", "job": "first", "start_urls": [f"{base}/p/0"]}
            started = await api.post("/api/v1/jobs", json=body)
            limited = await api.post(
                "/api/v1/jobs",
                json={**body, "job": "second", "settings": {"crawl.max_pages": 4, "crawl.concurrency": 1}},
            )
            unknown = await api.post("/api/v1/jobs", json={"spider": "nope"})
            invalid = await api.post(
                "/api/v1/jobs", json={"spider": "tree", "settings": {"crawl.max_pages": 0}}
            )
            wrong_type = await api.post("/api/v1/jobs", json={"spider": "tree", "start_urls": "http://x/"})

            async def both_ended() -> bool:
                jobs = (await api.get("/api/v1/jobs")).json()
                return len(jobs) == 2 and all(job["state"] == "stopped" for job in jobs)

            await wait_for(both_ended)
            again = await api.post("/api/v1/jobs", json={**body, "start_urls": [f"{base}/p/1"]})
            await wait_for(lambda: not node.running())
            node.drain()
            assert node.readiness() == (False, "draining")
    assert (started.status_code, started.json()) == (202, {"job": "first"})
    assert (limited.status_code, limited.json()) == (202, {"job": "second"})
    assert unknown.status_code == 400 and "this node knows ['tree']" in unknown.json()["error"]
    assert invalid.status_code == 400 and "crawl.max_pages" in invalid.json()["error"]
    assert wrong_type.status_code == 400 and "$.start_urls" in wrong_type.json()["error"]
    assert again.status_code == 202  # a finished job's name can run again
    under_1 = [1, 3, 4, *range(7, 11), *range(15, 23)]  # the rerun from /p/1: its subtree
    assert sorted(item["id"] for item in items["first"]) == sorted([*range(30), *under_1])
    assert len(items["second"]) == 4
    finished = node.results["second"]
    assert not isinstance(finished, BaseException) and finished.reason == "max_pages"


async def test_a_job_name_running_here_is_refused() -> None:
    site = tree_site(60, delay=0.05)
    node = JobNode([Tree()], settings=node_settings())
    urls: list[str] = []
    async with site.running() as base, anyio.create_task_group() as group:
        group.start_soon(functools.partial(node.run, "127.0.0.1:0", on_listening=urls.append))
        await wait_for(lambda: urls)
        async with httpx.AsyncClient(base_url=urls[0], headers=AUTH) as api:
            body = {"spider": "tree", "start_urls": [f"{base}/p/0"], "settings": {"crawl.concurrency": 1}}
            first = await api.post("/api/v1/jobs", json=body)
            twice = await api.post("/api/v1/jobs", json=body)
            stopped = await api.post("/api/v1/jobs/tree/stop")
            await wait_for(lambda: not node.running())
        node.drain()
    assert first.json() == {"job": "tree"}
    assert twice.status_code == 400 and "'tree' is running on this node" in twice.json()["error"]
    assert stopped.json() == {"control": "stopping"}
    result = node.results["tree"]
    assert not isinstance(result, BaseException) and result.reason == "stopped"
