"""The health-check loop probes idle proxies through real forward proxies on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest

from mocra_proxy import HealthCheck, Outcome, Proxy, ProxyPool, StaticSource
from mocra_proxy.testing import ForwardProxy, OriginServer

pytestmark = pytest.mark.anyio


async def until(condition: Callable[[], bool]) -> None:
    with anyio.fail_after(10):
        while True:
            if condition():
                return
            await anyio.sleep(0.01)


async def test_probe_success_ends_a_cooldown_and_a_dead_proxy_is_evicted() -> None:
    origin = OriginServer({"/health": "ok"})
    good, dead = ForwardProxy(username="u", password="s3cret"), ForwardProxy(mode="drop")
    async with origin.running() as site, good.running() as good_url, dead.running() as dead_url:
        check = HealthCheck(url=f"{site}/health", interval=0.05, timeout=2.0)
        pool = ProxyPool([StaticSource([good_url, dead_url])], health_check=check, cooldown=600, max_errors=2)
        async with pool:
            proxy = Proxy.parse(good_url)
            await pool.report(proxy, Outcome(ok=False, status=403))
            health = pool.health(proxy)
            assert health is not None and health.cooldown_until > 0
            await until(lambda: health.cooldown_until == 0.0)  # a probe went through and succeeded
            assert health.successes >= 1
            await until(lambda: pool.stats().evicted == 1)
            assert pool.proxies == [proxy]
    assert any(seen.authorized and seen.status == 200 for seen in good.seen)
