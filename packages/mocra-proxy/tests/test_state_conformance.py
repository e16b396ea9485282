"""One suite over every `PoolState`: `MemoryState` and `RedisState` (real Redis on 127.0.0.1:6379)."""

from __future__ import annotations

import random
import uuid
from typing import TYPE_CHECKING

import anyio
import msgspec
import pytest

from mocra_proxy import (
    DomainTier,
    MemoryState,
    Outcome,
    PoolState,
    Proxy,
    ProxyHealth,
    ProxyPool,
    RedisState,
    StaticSource,
    Tiers,
)
from mocra_proxy._merge import merge_health, merge_tier

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.anyio

REDIS_URL = "redis://127.0.0.1:6379/0"
P1, P2 = "http://10.0.0.1:8080", "http://user@10.0.0.2:8080"


class Handles(msgspec.Struct):
    """Two handles on one store, as two processes would hold (the same object for `MemoryState`)."""

    one: PoolState
    two: PoolState


@pytest.fixture(params=["memory", "redis"])
async def handles(request: pytest.FixtureRequest) -> AsyncIterator[Handles]:
    if request.param == "memory":
        state = MemoryState()
        yield Handles(state, state)
        return
    namespace = f"test-{uuid.uuid4().hex}"
    async with (
        RedisState(REDIS_URL, namespace=namespace) as one,
        RedisState(REDIS_URL, namespace=namespace) as two,
    ):
        try:
            yield Handles(one, two)
        finally:
            await one.clear()


def banned(at: float) -> ProxyHealth:
    return ProxyHealth(failures=1, consecutive_errors=1, cooldowns=1, cooldown_until=at + 30, last_used=at)


async def test_health_round_trips_exactly_and_unknown_ids_are_left_out(handles: Handles) -> None:
    record = ProxyHealth(
        successes=3,
        failures=2,
        consecutive_errors=1,
        cooldowns=1,
        cooldown_until=1_700_000_030.123456789,
        latency=0.1 + 0.2,
        last_used=1_700_000_000.987654321,
    )
    await handles.one.save_health(P2, record)
    health, tiers = await handles.two.load([P1, P2], ["nowhere.example"])
    assert health == {P2: record} and tiers == {}
    health[P2].failures = 99  # a loaded record is a copy
    assert (await handles.two.load([P2], []))[0][P2] == record
    assert await handles.one.load([], []) == ({}, {})


async def test_tiers_round_trip_with_their_ban_times(handles: Handles) -> None:
    tier = DomainTier(tier=2, since=1_700_000_000.5, bans=[1_700_000_001.25, 1_700_000_002.0])
    await handles.one.save_tier("shop.example", tier)
    _, tiers = await handles.two.load([], ["shop.example", "other.example"])
    assert tiers == {"shop.example": tier}


async def test_a_stale_failure_or_an_older_success_does_not_lose_a_ban(handles: Handles) -> None:
    await handles.one.save_health(P1, ProxyHealth(successes=4, last_used=100.0))  # both pools load this
    await handles.one.save_health(P1, msgspec.structs.replace(banned(101.0), successes=4))
    stale = ProxyHealth(successes=4, failures=1, consecutive_errors=1, last_used=102.0)  # a 500, old copy
    await handles.two.save_health(P1, stale)
    await handles.two.save_health(P1, ProxyHealth(successes=5, last_used=100.5))  # a success before the ban
    health = (await handles.one.load([P1], []))[0][P1]
    assert (health.cooldown_until, health.cooldowns, health.consecutive_errors) == (131.0, 1, 1)
    assert (health.successes, health.failures, health.last_used) == (5, 1, 102.0)
    await handles.two.save_health(P1, ProxyHealth(successes=6, failures=1, last_used=103.0))
    health = (await handles.one.load([P1], []))[0][P1]
    assert (health.cooldown_until, health.consecutive_errors, health.successes) == (
        0.0,
        0,
        6,
    )  # a later success


async def test_concurrent_saves_from_two_handles_keep_the_ban(handles: Handles) -> None:
    await handles.one.save_health(P1, ProxyHealth(last_used=100.0))
    async with anyio.create_task_group() as tg:
        tg.start_soon(handles.one.save_health, P1, banned(100.5))  # sent first: a last write would undo it
        for i in range(20):
            success = ProxyHealth(successes=1, last_used=100.0 + i / 100)  # all before the ban
            tg.start_soon(handles.two.save_health, P1, success)
            failure = ProxyHealth(failures=1, consecutive_errors=1, last_used=101.0)  # no ban, old copy
            tg.start_soon(handles.two.save_health, P1, failure)
    health = (await handles.one.load([P1], []))[0][P1]
    assert health.cooldown_until == 130.5 and health.cooldowns == 1


async def test_an_eviction_is_for_good_and_counts_never_go_down(handles: Handles) -> None:
    await handles.one.save_health(
        P1, ProxyHealth(successes=5, failures=5, consecutive_errors=5, evicted=True)
    )
    await handles.two.save_health(P1, ProxyHealth(successes=3, last_used=200.0))
    health = (await handles.one.load([P1], []))[0][P1]
    assert health.evicted and (health.successes, health.failures) == (5, 5)


async def test_tier_merges_keep_the_newest_move_and_every_ban(handles: Handles) -> None:
    await handles.one.save_tier("shop.example", DomainTier(tier=0, since=10.0, bans=[11.0]))
    await handles.two.save_tier("shop.example", DomainTier(tier=0, since=10.0, bans=[12.0]))
    assert (await handles.one.load([], ["shop.example"]))[1]["shop.example"].bans == [11.0, 12.0]
    await handles.one.save_tier("shop.example", DomainTier(tier=1, since=13.0))  # escalated
    await handles.two.save_tier(
        "shop.example", DomainTier(tier=0, since=10.0, bans=[11.0, 12.0, 14.0])
    )  # stale
    assert (await handles.two.load([], ["shop.example"]))[1]["shop.example"] == DomainTier(tier=1, since=13.0)
    await handles.two.save_tier("shop.example", DomainTier(tier=0, since=400.0))  # stepped down later
    assert (await handles.one.load([], ["shop.example"]))[1]["shop.example"] == DomainTier(
        tier=0, since=400.0
    )


async def test_saves_follow_the_merge_rules_for_any_pair_of_records(handles: Handles) -> None:
    rng = random.Random(18)

    def record() -> ProxyHealth:
        errors = rng.choice([0, 0, 1, 3])
        return ProxyHealth(
            successes=rng.randrange(5),
            failures=rng.randrange(5),
            consecutive_errors=errors,
            cooldowns=rng.randrange(3) if errors else 0,
            cooldown_until=rng.choice([0.0, 130.25, 160.5]),
            latency=rng.random(),
            last_used=rng.choice([100.0, 100.5, 101.0]),
            evicted=rng.random() < 0.1,
        )

    for i in range(40):
        first, second = record(), record()
        await handles.one.save_health(f"http://10.9.0.{i}:80", first)
        await handles.two.save_health(f"http://10.9.0.{i}:80", second)
        health = (await handles.one.load([f"http://10.9.0.{i}:80"], []))[0]
        assert health[f"http://10.9.0.{i}:80"] == merge_health(first, second), (first, second)
    a, b = DomainTier(tier=1, since=5.0, bans=[6.0]), DomainTier(tier=0, since=4.0, bans=[4.5])
    await handles.one.save_tier("x.example", a)
    await handles.two.save_tier("x.example", b)
    assert (await handles.one.load([], ["x.example"]))[1]["x.example"] == merge_tier(a, b)


async def test_pools_sharing_the_state_do_not_lease_a_proxy_the_other_banned(handles: Handles) -> None:
    def pool(state: PoolState) -> ProxyPool:
        source = StaticSource(["http://10.0.0.1:8080", "http://10.0.0.2:8080"])
        return ProxyPool([source], state=state, cooldown=300, tiers=Tiers())

    async with pool(handles.one) as one, pool(handles.two) as two:
        for p in two.proxies:  # two has used both proxies before one's ban
            await two.report(p, Outcome(ok=True, status=200))
        bad = Proxy.parse("http://10.0.0.1:8080")
        await one.report(bad, Outcome(ok=False, status=403), domain="shop.example")
        await two.report(bad, Outcome(ok=False, status=500))  # two's copy has no ban yet
        await two.sync()
        for _ in range(4):
            async with two.lease(domain="shop.example") as lease:
                assert lease.proxy.id != bad.id
                await lease.ok()
