"""Selection in big pools: each policy looks at a few proxies per lease, with the pool's semantics kept."""

from __future__ import annotations

import random
from collections import Counter
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

import anyio
import pytest

from mocra_proxy import (
    Limits,
    NoProxyAvailable,
    Proxy,
    ProxyPool,
    ProxyPoolConfig,
    RandomPolicy,
    RoundRobinPolicy,
    SamplingPolicy,
    ScorePolicy,
    StaticSource,
)

if TYPE_CHECKING:
    from conftest import Clock

pytestmark = pytest.mark.anyio

HUNDRED = [f"http://10.0.1.{i + 1}:8080" for i in range(100)]


class CountingScore(ScorePolicy):
    """A `ScorePolicy` that counts how many candidates it was offered."""

    def __init__(self, **options: object) -> None:
        super().__init__(**options)  # type: ignore[arg-type]
        self.offered: list[int] = []

    def choose(self, candidates: object, now: float) -> int:
        self.offered.append(len(candidates))  # type: ignore[arg-type]
        return super().choose(candidates, now)  # type: ignore[arg-type]


async def test_a_clearly_better_proxy_is_leased_far_more_often_at_100_proxies(clock: Clock) -> None:
    policy = ScorePolicy(rng=random.Random(11))
    async with ProxyPool([StaticSource(HUNDRED)], policy=policy, clock=clock, max_errors=10_000) as pool:
        good, bad = pool.proxies[0], pool.proxies[1]
        leased: Counter[str] = Counter()
        for _ in range(3_000):
            async with pool.lease() as lease:
                leased[lease.proxy.host] += 1
                if lease.proxy == good:
                    await lease.ok(200, latency=0.05)
                elif lease.proxy == bad:
                    await lease.failed(500, latency=2.0)  # counts, does not cool down
                else:
                    await lease.ok(200, latency=0.5)
            clock.now += 0.1
    average = 3_000 / 100
    assert leased[good.host] > 3 * average, leased.most_common(3)
    assert leased[good.host] > 20 * max(leased[bad.host], 1), (leased[good.host], leased[bad.host])


async def test_score_policy_offers_a_bounded_sample_at_100_proxies(clock: Clock) -> None:
    policy = CountingScore(sample=8, rng=random.Random(3))
    async with ProxyPool([StaticSource(HUNDRED)], policy=policy, clock=clock) as pool:
        for _ in range(50):
            async with pool.lease() as lease:
                await lease.ok(200, latency=0.1)
            clock.now += 0.01
    assert policy.offered and max(policy.offered) <= 8


async def test_score_policy_without_a_sample_compares_every_free_proxy(clock: Clock) -> None:
    policy = CountingScore(sample=None)
    async with ProxyPool([StaticSource(HUNDRED)], policy=policy, clock=clock) as pool:
        best = pool.proxies[57]
        health = pool.health(best)
        assert health is not None
        health.successes = 50
        async with pool.lease() as lease:
            assert lease.proxy == best
    assert policy.offered == [100]


def test_policies_with_visit_are_sampling_policies() -> None:
    policies: list[SamplingPolicy] = [ScorePolicy(), RoundRobinPolicy(), RandomPolicy()]
    assert [p.sample for p in policies[1:]] == [1, 1]
    assert list(ScorePolicy(sample=8).visit(5)) == [0, 1, 2, 3, 4]
    assert sorted(ScorePolicy(sample=8, rng=random.Random(1)).visit(12)) == list(range(12))
    draws = list(ScorePolicy(sample=8, rng=random.Random(1)).visit(1_000))
    assert len(draws) == 16 and all(0 <= d < 1_000 for d in draws)
    with pytest.raises(ValueError, match="sample"):
        ScorePolicy(sample=0)


async def test_round_robin_takes_every_proxy_in_turn_at_100_proxies() -> None:
    async with ProxyPool([StaticSource(HUNDRED)], policy=RoundRobinPolicy()) as pool:
        hosts = []
        for _ in range(200):
            async with pool.lease() as lease:
                hosts.append(lease.proxy.host)
    assert hosts == [p.host for p in pool.proxies] * 2


async def test_round_robin_skips_busy_proxies() -> None:
    async with ProxyPool(
        [StaticSource(HUNDRED[:4])], policy=RoundRobinPolicy(), limits=Limits(concurrency=1)
    ) as pool:
        first, second, third, fourth = pool.proxies
        async with pool.lease() as held:
            assert held.proxy == first
            async with pool.lease() as lease:
                assert lease.proxy == second
        async with pool.lease() as lease:
            assert lease.proxy == third
            async with pool.lease() as inner:
                assert inner.proxy == fourth
            async with pool.lease() as inner:
                assert inner.proxy == first  # wraps around, skipping the held `third`


async def test_random_policy_spreads_over_100_proxies() -> None:
    async with ProxyPool([StaticSource(HUNDRED)], policy=RandomPolicy(random.Random(5))) as pool:
        leased: Counter[str] = Counter()
        for _ in range(2_000):
            async with pool.lease() as lease:
                leased[lease.proxy.host] += 1
    assert len(leased) == 100 and max(leased.values()) < 60


@pytest.mark.parametrize(
    "policy", [ScorePolicy(rng=random.Random(2)), RoundRobinPolicy(), RandomPolicy(random.Random(2))]
)
async def test_the_last_free_proxy_is_found_and_then_the_lease_waits(
    policy: SamplingPolicy, clock: Clock
) -> None:
    limits = Limits(concurrency=1)
    async with ProxyPool([StaticSource(HUNDRED)], policy=policy, limits=limits, clock=clock) as pool:
        async with AsyncExitStack() as stack:
            held = [await stack.enter_async_context(pool.lease()) for _ in range(99)]
            last = await stack.enter_async_context(pool.lease(timeout=0.01))
            assert len({lease.proxy for lease in [*held, last]}) == 100
            with pytest.raises(NoProxyAvailable, match="100 limited"):
                async with pool.lease(timeout=0.01):
                    pass
            got: list[Proxy] = []

            async def wait_for_one() -> None:
                async with pool.lease(timeout=5) as lease:
                    got.append(lease.proxy)

            async with anyio.create_task_group() as tg:
                tg.start_soon(wait_for_one)
                await anyio.sleep(0.05)
                assert got == []  # waiting (not spinning: the count of waits stays small)
                freed = held[42].proxy
                await stack.aclose()  # every lease ends; the waiter gets one of them
            assert len(got) == 1 and freed in pool.proxies
        assert pool.stats().waits < 10


async def test_sampling_keeps_to_the_domains_tier(clock: Clock) -> None:
    cheap = [Proxy.parse(url, tier=0) for url in HUNDRED[:50]]
    dear = [Proxy.parse(url, tier=1) for url in HUNDRED[50:]]

    class Tiered:
        name, weight = "tiered", 1.0

        async def fetch(self) -> list[Proxy]:
            return [*cheap, *dear]

    async with ProxyPool([Tiered()], policy=ScorePolicy(rng=random.Random(4)), clock=clock) as pool:
        tiers = set()
        for _ in range(200):
            async with pool.lease(domain="example.com") as lease:
                tiers.add(lease.proxy.tier)
                await lease.ok(200, latency=0.1)
            clock.now += 0.01
    assert tiers == {0}


def test_score_sample_from_config() -> None:
    config = ProxyPoolConfig.from_mapping({"sources": [], "policy": {"name": "score", "sample": 4}})
    policy = config.pool_options()["policy"]
    assert isinstance(policy, ScorePolicy) and policy.sample == 4
    every = ProxyPoolConfig.from_mapping({"sources": [], "policy": {"name": "score", "sample": 0}})
    assert "sample=None" in repr(every.pool_options()["policy"])
