"""Tiers per domain: start cheapest, escalate on repeated bans, step back down; shared through PoolState."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from mocra_proxy import MemoryState, Outcome, Proxy, ProxyPool, Tiers

if TYPE_CHECKING:
    from conftest import Clock


pytestmark = pytest.mark.anyio


class TieredSource:
    name, weight = "tiered", 1.0

    async def fetch(self) -> list[Proxy]:
        return [
            Proxy.parse("http://10.0.0.1:8080", tier=0),
            Proxy.parse("http://10.0.0.2:8080", tier=0),
            Proxy.parse("http://10.1.0.1:8080", tier=1),
            Proxy.parse("http://10.2.0.1:8080", tier=2),
        ]


TIERS = Tiers(bans=2, window=10.0, step_down_after=100.0)


async def lease_tier(pool: ProxyPool, domain: str | None, status: int = 200) -> int:
    async with pool.lease(domain=domain) as lease:
        if status == 200:
            await lease.ok()
        else:
            await lease.failed(status)
        return lease.proxy.tier


async def test_domain_starts_cheapest_escalates_on_bans_and_steps_down(clock: Clock) -> None:
    async with ProxyPool([TieredSource()], clock=clock, tiers=TIERS, cooldown=0.001) as pool:
        assert await lease_tier(pool, "shop.example", 403) == 0
        clock.now += 1
        assert await lease_tier(pool, "shop.example", 403) == 0  # second ban within the window
        clock.now += 1
        assert await lease_tier(pool, "shop.example") == 1
        assert await lease_tier(pool, "other.example") == 0  # tiers are per domain
        assert await lease_tier(pool, None) == 0
        for _ in range(2):
            assert await lease_tier(pool, "shop.example", 429) == 1
            clock.now += 1
        assert await lease_tier(pool, "shop.example") == 2
        clock.now += 100
        assert await lease_tier(pool, "shop.example") == 1  # steps down one tier after a while
        clock.now += 100
        assert await lease_tier(pool, "shop.example") == 0


async def test_bans_outside_the_window_do_not_escalate(clock: Clock) -> None:
    async with ProxyPool([TieredSource()], clock=clock, tiers=TIERS, cooldown=0.001) as pool:
        for _ in range(4):
            assert await lease_tier(pool, "shop.example", 403) == 0
            clock.now += 11


async def test_without_tiers_all_proxies_are_candidates() -> None:
    async with ProxyPool([TieredSource()], tiers=None, max_errors=100, cooldown=60) as pool:
        tiers = {await lease_tier(pool, "shop.example", 403) for _ in range(4)}
    assert tiers == {0, 1, 2}


async def test_state_shares_bans_evictions_and_tiers_between_pools(clock: Clock) -> None:
    state = MemoryState()
    one = ProxyPool([TieredSource()], clock=clock, tiers=TIERS, state=state, max_errors=2, cooldown=30)
    two = ProxyPool([TieredSource()], clock=clock, tiers=TIERS, state=state, max_errors=2, cooldown=30)
    async with one, two:
        cheap = Proxy.parse("http://10.0.0.1:8080", tier=0)
        await one.report(cheap, Outcome(ok=False, status=403), domain="shop.example")
        await one.report(
            Proxy.parse("http://10.0.0.2:8080"), Outcome(ok=False, status=403), domain="shop.example"
        )
        assert await lease_tier(one, "shop.example") == 1
        await one.report(cheap, Outcome(ok=False, status=403))  # second error in a row: evicted
        await two.sync()
        assert cheap not in two.proxies
        assert await lease_tier(two, "shop.example") == 1  # two sees the domain's tier
        health = two.health(Proxy.parse("http://10.0.0.2:8080"))
        assert health is not None and health.cooldown_until == clock.now + 30
    async with ProxyPool([TieredSource()], clock=clock, state=state) as three:
        assert cheap not in three.proxies  # an evicted proxy is not loaded again
