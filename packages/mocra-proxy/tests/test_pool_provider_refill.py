"""The pool refills from a local provider endpoint when evictions leave too few healthy proxies."""

from __future__ import annotations

import anyio
import pytest

from mocra_proxy import ProviderSource, ProxiedHttpx, Proxy, ProxyPool, RoundRobinPolicy
from mocra_proxy.testing import ForwardProxy, OriginServer

pytestmark = pytest.mark.anyio


async def test_evictions_below_refill_below_refill_the_pool_from_the_provider() -> None:
    site = OriginServer({"/": "page"})
    dead, first, second, third = ForwardProxy(), ForwardProxy(), ForwardProxy(), ForwardProxy()
    async with dead.running():
        pass  # its port is closed now
    async with (
        site.running() as base,
        first.running(),
        second.running(),
        third.running(),
    ):
        site.pages["/proxies"] = f"{dead.url}\n{first.url}\n"
        provider = ProviderSource(base + "/proxies", min_interval=0.0, name="local-provider")
        async with (
            ProxyPool([provider], policy=RoundRobinPolicy(), max_errors=1, refill_below=2) as pool,
            ProxiedHttpx(pool) as http,
        ):
            site.pages["/proxies"] = f"{second.url}\n{third.url}\n"  # the provider's next answer
            pages = [(await http.get(base + "/")).text for _ in range(2)]  # `dead` is evicted on the way
            with anyio.fail_after(5):
                while len(pool.proxies) < 3:  # noqa: ASYNC110 - the pool's upkeep task refills
                    await anyio.sleep(0.01)
            pages += [(await http.get(base + "/")).text for _ in range(3)]
            left, evicted = pool.proxies, pool.stats().evicted

    provider_hits = [r for r in site.requests if r.target == "/proxies"]
    assert pages == ["page"] * 5
    assert evicted == 1
    assert sorted(p.port for p in left) == sorted(p.port for p in (first, second, third))
    assert len(provider_hits) == provider.requests == 2  # on start, and once to refill
    assert second.seen and third.seen  # the refilled proxies carry pages
    assert Proxy.parse(dead.url) not in left
