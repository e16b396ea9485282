"""Crawls through the engine with `[proxy]` set: real `ForwardProxy` instances in front of a local site."""

from __future__ import annotations

import json
import uuid

import pytest

from mocra_core import ConfigError, MocraBuilder
from mocra_core.config import QueueSettings, Settings
from mocra_core.download import HttpxDownloader, ProxyRoute
from mocra_core.engine._plan import BackendPlan
from mocra_core.engine._wiring import proxy_state_url
from mocra_core.testing import LocalServer, ServerResponse
from mocra_proxy import Proxy, RedisState
from mocra_proxy.testing import ForwardProxy

from .proxy_helpers import Fetch, closed_port, running

pytestmark = pytest.mark.anyio


def pool(*urls: str) -> tuple[str, str]:
    """`-s` overrides for a round-robin pool over `urls`."""
    return (
        f'proxy.pool.sources=[{{type = "static", urls = {json.dumps(list(urls))}}}]',
        'proxy.pool.policy={name = "round_robin"}',
    )


def paths(n: int) -> list[str]:
    return [f"/p{i}" for i in range(n)]


async def test_a_crawl_goes_through_the_pool_and_around_a_banned_proxy(
    builder: MocraBuilder, server: LocalServer
) -> None:
    for path in paths(9):
        server.route(path, ServerResponse(body=path))
    banned, one, two = ForwardProxy(mode="forbid"), ForwardProxy(), ForwardProxy()
    async with running(banned, one, two) as urls:
        spider = Fetch(*(server.url(path) for path in paths(9)))
        result = await builder.set(*pool(*urls)).spider(spider).run_async()

    assert result.ok and not result.failures
    assert dict(server.hits) == dict.fromkeys(paths(9), 1)
    assert result.stats.retries == 0  # a ban is tried again through another proxy, in the same attempt
    assert {seen.status for seen in banned.seen} == {403}
    assert 1 <= len(banned.seen) <= 3  # leased by the first requests at once, then cooled down
    assert len(one.seen) + len(two.seen) == 9
    assert min(len(one.seen), len(two.seen)) >= 3


async def test_a_fixed_proxy_url_carries_the_crawl(builder: MocraBuilder, server: LocalServer) -> None:
    for path in paths(3):
        server.route(path, ServerResponse(body=path))
    fixed = ForwardProxy(username="user", password="s3cret-pw")
    async with running(fixed) as [url]:
        spider = Fetch(*(server.url(path) for path in paths(3)))
        result = await builder.set(f"proxy.url={url}").spider(spider).run_async()

    assert result.ok
    assert sorted(seen.target for seen in fixed.seen) == [server.url(path) for path in paths(3)]
    assert all(seen.authorized for seen in fixed.seen)


async def test_dead_letters_name_the_proxy_redacted(builder: MocraBuilder, server: LocalServer) -> None:
    server.route("/p0", ServerResponse(body="never"))
    dead = [f"http://user:s3cret-pw@127.0.0.1:{closed_port()}" for _ in range(2)]
    spider = Fetch(server.url("/p0"))
    overrides = (*pool(*dead), "retry.max_retries=1", "proxy.pool.cooldown=0.01")
    result = await builder.set(*overrides).spider(spider).run_async()

    [failure] = result.failures
    assert "via proxy http://user:***@127.0.0.1:" in failure.reason
    assert "s3cret-pw" not in failure.reason
    assert not server.hits


class Direct(Fetch):
    """Sends its requests through the downloader registered as `direct` (no proxy)."""

    name = "direct"
    downloader = "direct"


async def test_a_spider_picks_its_own_route_by_its_downloader(
    builder: MocraBuilder, server: LocalServer
) -> None:
    for path in paths(4):
        server.route(path, ServerResponse(body=path))
    fixed = ForwardProxy()
    async with running(fixed) as [url]:
        result = await (
            builder.set(f"proxy.url={url}")
            .downloader(HttpxDownloader(proxies=ProxyRoute()), name="direct")
            .spider(Fetch(server.url("/p0"), server.url("/p1")))
            .spider(Direct(server.url("/p2"), server.url("/p3")))
            .run_async()
        )

    assert result.ok
    assert dict(server.hits) == dict.fromkeys(paths(4), 1)
    assert sorted(seen.target for seen in fixed.seen) == [server.url("/p0"), server.url("/p1")]


REDIS = "redis://127.0.0.1:6379/0"


async def test_the_pool_state_is_shared_through_redis(builder: MocraBuilder, server: LocalServer) -> None:
    for path in paths(4):
        server.route(path, ServerResponse(body=path))
    banned, good = ForwardProxy(mode="forbid"), ForwardProxy()
    job = f"proxy-state-{uuid.uuid4().hex[:8]}"
    async with running(banned, good) as urls:
        spider = Fetch(*(server.url(path) for path in paths(4)))
        overrides = (*pool(*urls), f"proxy.state={REDIS}", f"crawl.job={job}")
        result = await builder.set(*overrides).spider(spider).run_async()
    assert result.ok
    async with RedisState(REDIS, namespace=f"mocra-{job}") as state:  # what another worker of the job reads
        health, _ = await state.load([Proxy.parse(url).id for url in urls], [])
        await state.clear()
    assert health[Proxy.parse(urls[0]).id].failures >= 1
    assert health[Proxy.parse(urls[1]).id].successes == 4


def plan(url: str = "memory://") -> BackendPlan:
    return BackendPlan.decide(Settings(queue=QueueSettings(url=url)), job="j")


def test_redis_state_uses_the_jobs_redis() -> None:
    assert proxy_state_url("redis", plan("redis://10.0.0.1:6379/2")) == "redis://10.0.0.1:6379/2"
    assert proxy_state_url("redis://10.0.0.2:6379/0", plan()) == "redis://10.0.0.2:6379/0"
    assert proxy_state_url("memory", plan("redis://10.0.0.1:6379/2")) is None
    with pytest.raises(ConfigError, match="proxy.state: 'redis' shares the pool's state"):
        proxy_state_url("redis", plan())
