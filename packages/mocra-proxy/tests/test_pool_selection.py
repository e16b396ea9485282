"""Selection: the three policies, rotation through the pool, sticky keys."""

from __future__ import annotations

import random
from collections import Counter
from typing import TYPE_CHECKING

import pytest

from mocra_proxy import (
    Outcome,
    ProxyHealth,
    ProxyPool,
    RandomPolicy,
    RoundRobinPolicy,
    ScorePolicy,
    SelectionPolicy,
    StaticSource,
)

if TYPE_CHECKING:
    from conftest import Clock


pytestmark = pytest.mark.anyio


THREE = ("http://10.0.0.1:8080", "http://10.0.0.2:8080", "http://10.0.0.3:8080")


def test_score_prefers_success_then_speed_then_rest() -> None:
    policy = ScorePolicy()
    reliable, flaky = ProxyHealth(successes=9, failures=1), ProxyHealth(successes=1, failures=9)
    assert policy.choose([flaky, reliable], now=100.0) == 1
    fast, slow = ProxyHealth(successes=5, latency=0.1), ProxyHealth(successes=5, latency=2.0)
    assert policy.choose([slow, fast], now=100.0) == 1
    just_used, rested = ProxyHealth(last_used=100.0), ProxyHealth(last_used=10.0)
    assert policy.choose([just_used, rested], now=100.0) == 1
    # the formula, as documented: success x speed x freshness
    health = ProxyHealth(successes=3, failures=1, latency=1.0, last_used=99.0)
    expected = (4 / 6) * (1 / 2) * (1 - 2.718281828459045**-1)
    assert policy.score(health, now=100.0) == pytest.approx(expected)


def test_round_robin_and_random_cover_all_candidates() -> None:
    three = [ProxyHealth(), ProxyHealth(), ProxyHealth()]
    rr = RoundRobinPolicy()
    assert [rr.choose(three, now=0.0) for _ in range(6)] == [0, 1, 2, 0, 1, 2]
    rnd = RandomPolicy(random.Random(7))
    assert set(Counter(rnd.choose(three, now=0.0) for _ in range(200))) == {0, 1, 2}


def test_policies_are_selection_policies() -> None:
    policies: list[SelectionPolicy] = [ScorePolicy(), RoundRobinPolicy(), RandomPolicy()]
    assert all(callable(p.choose) for p in policies)


async def test_score_policy_rotates_equal_proxies(clock: Clock) -> None:
    seen = []
    async with ProxyPool([StaticSource(THREE)], clock=clock) as pool:
        for _ in range(6):
            async with pool.lease() as lease:
                seen.append(lease.proxy.host)
                await lease.ok(200, latency=0.1)
            clock.now += 0.01
    assert Counter(seen) == {"10.0.0.1": 2, "10.0.0.2": 2, "10.0.0.3": 2}


async def test_score_policy_avoids_the_failing_proxy(clock: Clock) -> None:
    async with ProxyPool([StaticSource(THREE)], clock=clock, max_errors=100) as pool:
        bad = pool.proxies[0]
        for _ in range(3):  # 500s: failures that count but do not cool down
            await pool.report(bad, Outcome(ok=False, status=500))
        clock.now += 60
        hosts = []
        for _ in range(20):
            async with pool.lease() as lease:
                hosts.append(lease.proxy.host)
                await lease.ok()
            clock.now += 0.5
    assert bad.host not in hosts


async def test_round_robin_pool_rotates_in_order() -> None:
    async with ProxyPool([StaticSource(THREE)], policy=RoundRobinPolicy()) as pool:
        hosts = []
        for _ in range(6):
            async with pool.lease() as lease:
                hosts.append(lease.proxy.host)
    assert hosts == ["10.0.0.1", "10.0.0.2", "10.0.0.3"] * 2


async def test_sticky_key_keeps_its_proxy_until_it_fails() -> None:
    async with ProxyPool([StaticSource(THREE)], policy=RoundRobinPolicy()) as pool:
        async with pool.lease(key="alice") as first:
            await first.ok()
        for _ in range(5):
            async with pool.lease(key="alice") as again:
                assert again.proxy == first.proxy
                await again.ok()
            async with pool.lease(key="bob") as other:  # other leases move the round robin on
                await other.ok()
        async with pool.lease(key="alice") as failing:
            await failing.failed(403)
        async with pool.lease(key="alice") as moved:
            assert moved.proxy != first.proxy
        async with pool.lease(key="alice") as kept:
            assert kept.proxy == moved.proxy
