"""A run's lifecycle: each part goes prepare → ready → active → draining → stopped, or failed naming it.

Draining (`Engine.interrupt`, SIGINT/SIGTERM) takes no new work and finishes what is in flight, or, past
`crawl.drain_timeout`, cancels it and hands it back to its queue: on a durable queue (a job dir, Redis) the
next run completes the crawl, fetching again only what was in flight.
"""

from __future__ import annotations

import os
import pathlib
import uuid
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from mocra_core import BackendUnavailable, ConfigError, Ctx, MocraBuilder, Response, Spider, on_item
from mocra_core.config import Settings, load
from mocra_core.engine import BackendPlan, Engine, StateChange
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.anyio

REDIS_URL = os.environ.get("MOCRA_TEST_REDIS_URL", "redis://127.0.0.1:6379") + "/15"
STATES = ["prepare", "ready", "active", "draining", "stopped"]
PAGES = 24


class Tree(Spider[dict[str, int]]):
    """Page n links to 2n+1 and 2n+2; one item per page."""

    name = "tree"

    def __init__(self, start: str) -> None:
        self.start_urls = [start]  # type: ignore[misc]

    async def parse(self, response: Response, ctx: Ctx[dict[str, int]]) -> None:
        ctx.emit({"n": int(response.url.rsplit("/", 1)[1])})
        for href in response.links():
            ctx.follow(href)


def tree_site(server: LocalServer, *, delay: float) -> None:
    async def tree_page(request: ServerRequest) -> ServerResponse:
        n = int(request.path.rsplit("/", 1)[1])
        await anyio.sleep(delay)
        links = "".join(f'<a href="/p/{k}">{k}</a>' for k in (2 * n + 1, 2 * n + 2) if k < PAGES)
        return ServerResponse(body=f"<html><body>{links}</body></html>")

    for n in range(PAGES):
        server.route(f"/p/{n}", tree_page)


def by_part(changes: list[StateChange]) -> dict[str, list[str]]:
    states: dict[str, list[str]] = defaultdict(list)
    for change in changes:
        states[change.part].append(change.new)
    return dict(states)


async def test_each_part_goes_through_every_state_in_order(
    builder: MocraBuilder, server: LocalServer
) -> None:
    tree_site(server, delay=0)
    items: list[dict[str, int]] = []
    engine = builder.spider(Tree(server.url("/p/0")), on_item(items.append)).build()
    with engine.events() as events:  # subscribed before the run: every change, then the end of the stream
        result = await engine.run()
        changes = [change async for change in events]

    assert result.reason == "finished" and len(items) == PAGES
    states = by_part(changes)
    expected_parts = {"engine", "downloaders", "sinks", "coordination", "seen", "queue"}
    assert expected_parts | {"generate", "download", "parse"} <= set(states)
    assert all(seen == STATES for seen in states.values()), states
    for part in states:  # each change starts where the part's last one ended
        olds = [change.old for change in changes if change.part == part]
        assert olds == [None, *STATES[:-1]]
    assert changes[-1].part == "engine" and changes[-1].new == "stopped" and changes[-1].cause == "finished"
    ready = changes.index(next(c for c in changes if c.part == "engine" and c.new == "ready"))
    assert all(c.new != "active" for c in changes[:ready])  # nothing works before all is up
    assert "queue memory" in (changes[ready].cause or "")  # the plan, described
    assert [c.time for c in changes] == sorted(c.time for c in changes)
    assert engine.state == "stopped" and set(engine.parts().values()) == {"stopped"}
    with engine.events() as late:
        assert [change async for change in late] == changes  # a late subscriber gets the history


@pytest.mark.parametrize("url", ["redis://127.0.0.1:1/0", "nats://127.0.0.1:1"])
async def test_a_broker_refusing_at_start_fails_the_run_naming_it_before_any_fetch(
    builder: MocraBuilder, server: LocalServer, url: str
) -> None:
    tree_site(server, delay=0)
    builder.set(
        f"queue.url={url}",
        "coordination.url=memory://",  # so that the queue is what refuses
        "queue.redis.connect_timeout=0.5",
        "queue.nats.timeout=0.5",
    )
    engine = builder.spider(Tree(server.url("/p/0"))).build()

    with pytest.raises(BackendUnavailable) as refused:
        await engine.run()

    with engine.events() as events:
        changes = [change async for change in events]
    assert dict(server.hits) == {}  # no page fetched
    assert engine.state == "failed"
    assert engine.parts()["queue"] == "failed"
    [failed] = [change for change in changes if change.part == "queue" and change.new == "failed"]
    assert failed.cause is not None and failed.cause.startswith(f"queue ({url}): BackendUnavailable")
    assert changes[-1].part == "engine" and changes[-1].new == "failed"
    assert changes[-1].cause == failed.cause  # the run's failure names the part
    assert any(f"failed in prepare: queue ({url})" in note for note in refused.value.__notes__)
    assert all(engine.parts()[part] == "stopped" for part in ("coordination", "sinks", "downloaders"))
    assert "active" not in {change.new for change in changes}


@pytest.fixture(params=["job_dir", "redis"])
def durable(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[list[str]]:
    """The settings of a durable queue: a job dir, or a fresh job on Redis (its keys deleted afterwards)."""
    if request.param == "job_dir":
        yield [f'crawl.job_dir="{tmp_path / "job"}"']
        return
    import redis

    job = f"lifecycle{uuid.uuid4().hex[:12]}"
    yield [f"queue.url={REDIS_URL}", f"crawl.job={job}"]
    with redis.Redis(host="127.0.0.1", port=6379, db=15) as client:
        for key in client.scan_iter(match=f"mocra-{job}*", count=1000):
            client.delete(key)


def durable_run(durable: list[str], start: str, items: list[dict[str, int]], *settings: str) -> Engine:
    builder = MocraBuilder().set(
        "crawl.obey_robots=false", "crawl.concurrency=4", "crawl.parse_workers=2", *durable, *settings
    )
    return builder.spider(Tree(start), on_item(items.append)).build()


async def interrupt_when(engine: Engine, ready: Any) -> tuple[Any, list[StateChange]]:
    """Run `engine`, interrupt it once `ready()` is true, and return its result and state changes."""
    result: Any = None

    async def run() -> None:
        nonlocal result
        result = await engine.run()

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        with anyio.fail_after(30):
            while not ready():  # noqa: ASYNC110 - the server's hit counts have no event to wait on
                await anyio.sleep(0.01)
        engine.interrupt()
        assert engine.state == "draining"  # at once
    with engine.events() as events:
        return result, [change async for change in events]


async def test_draining_finishes_the_work_in_flight_and_the_next_run_the_rest(
    server: LocalServer, durable: list[str]
) -> None:
    tree_site(server, delay=0.2)
    first: list[dict[str, int]] = []
    engine = durable_run(durable, server.url("/p/0"), first)

    result, changes = await interrupt_when(engine, lambda: len(first) >= 3)

    assert result.reason == "interrupted"
    assert 3 <= len(first) < PAGES
    draining = [c for c in changes if c.new == "draining"]
    assert draining[0].part == "engine" and draining[0].cause == "interrupted"
    assert by_part(changes)["download"] == STATES
    second: list[dict[str, int]] = []
    again = await durable_run(durable, server.url("/p/0"), second).run()
    assert again.reason == "finished"
    assert sorted(item["n"] for item in first + second) == list(range(PAGES))  # nothing lost, once each
    assert all(hits == 1 for hits in server.hits.values()), server.hits  # in flight: finished, not refetched


async def test_work_in_flight_past_drain_timeout_is_cancelled_and_handed_back(
    server: LocalServer, durable: list[str]
) -> None:
    slow = True

    async def leaf(request: ServerRequest) -> ServerResponse:
        if slow:
            await anyio.sleep(60)  # far beyond the drain timeout
        return ServerResponse(body="leaf")

    leaves = [f"/leaf/{n}" for n in range(8)]
    server.route("/p/0", ServerResponse(body="".join(f'<a href="{leaf}">x</a>' for leaf in leaves)))
    for path in leaves:
        server.route(path, leaf)
    first: list[dict[str, int]] = []
    engine = durable_run(durable, server.url("/p/0"), first, "crawl.drain_timeout=0.5")
    in_flight = lambda: sum(server.hits[path] for path in leaves) >= 4  # noqa: E731 - all 4 workers held

    started = anyio.current_time()
    result, changes = await interrupt_when(engine, in_flight)
    took = anyio.current_time() - started

    assert result.reason == "interrupted"
    assert took < 20  # not the 60 s a leaf takes: the drain was cut at drain_timeout
    assert by_part(changes)["engine"] == STATES
    fetched_once = {path for path in leaves if server.hits[path]}
    assert len(fetched_once) == 4
    settings = load(None, overrides=durable, environ={})
    plan = BackendPlan.decide(settings, job=settings.crawl.job or "tree", read_only=True)
    async with plan.read_queue() as queue:
        assert await queue.pending("request") == 8  # handed back: the 4 in flight and the 4 not started
    slow = False
    second: list[dict[str, int]] = []
    again = await durable_run(durable, server.url("/p/0"), second).run()
    assert again.reason == "finished"
    assert len(second) == 8 and len(first) == 1  # nothing lost
    assert {path for path in leaves if server.hits[path] == 2} == fetched_once  # again: what was in flight
    assert all(server.hits[path] >= 1 for path in leaves)


def test_drain_timeout_is_a_setting_like_the_others(tmp_path: pathlib.Path) -> None:
    assert Settings().crawl.drain_timeout == 30.0
    toml = tmp_path / "mocra.toml"
    toml.write_text("[crawl]\ndrain_timeout = 12.5\n")
    assert load(str(toml), overrides=[], environ={}).crawl.drain_timeout == 12.5
    assert load(None, overrides=[], environ={"MOCRA_CRAWL__DRAIN_TIMEOUT": "4"}).crawl.drain_timeout == 4
    assert load(None, overrides=["crawl.drain_timeout=2"], environ={}).crawl.drain_timeout == 2
    with pytest.raises(ConfigError, match="crawl.drain_timeout"):
        load(None, overrides=["crawl.drain_timeout=0"], environ={})


class RefusingSink:
    """A sink whose database refuses it at start."""

    async def open(self) -> None:
        raise ConnectionRefusedError(111, "Connection refused")

    async def write(self, items: Any) -> None:
        raise AssertionError("never reached")

    async def close(self) -> None:
        raise AssertionError("never opened")

    def __repr__(self) -> str:
        return "<RefusingSink>"


async def test_a_sink_failing_at_start_fails_the_run_naming_it_before_any_fetch(
    builder: MocraBuilder, server: LocalServer
) -> None:
    tree_site(server, delay=0)
    engine = builder.spider(Tree(server.url("/p/0")), RefusingSink()).build()

    with pytest.raises(ConnectionRefusedError):
        await engine.run()

    assert dict(server.hits) == {}
    assert engine.state == "failed"
    assert engine.parts() == {"engine": "failed", "downloaders": "stopped", "sinks": "failed"}
    with engine.events() as events:
        causes = [change.cause async for change in events if change.new == "failed"]
    assert causes == ["sinks (<RefusingSink>): ConnectionRefusedError: [Errno 111] Connection refused"] * 2
