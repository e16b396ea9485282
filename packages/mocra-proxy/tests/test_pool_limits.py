"""Limits at lease time, and leases that wait (woken by a release or a timer, never polling)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import pytest

from mocra_proxy import Limits, NoProxyAvailable, Outcome, ProxyPool, StaticSource

if TYPE_CHECKING:
    from conftest import Clock


pytestmark = pytest.mark.anyio


ONE = StaticSource(["http://10.0.0.1:8080"])


async def test_rate_per_proxy_spaces_leases(clock: Clock) -> None:
    async with ProxyPool([ONE], clock=clock, limits=Limits(rate=4.0)) as pool:
        granted = []
        for _ in range(16):  # 16 ticks of 1/16 s (exact in binary) = 1 s
            try:
                async with pool.lease(timeout=0):
                    granted.append(clock.now)
            except NoProxyAvailable as exc:
                assert "1 limited" in str(exc)
            clock.now += 0.0625
    assert len(granted) == 4
    assert [round(b - a, 6) for a, b in zip(granted, granted[1:], strict=False)] == [0.25, 0.25, 0.25]


async def test_rate_per_proxy_and_domain_leaves_other_domains_free(clock: Clock) -> None:
    async with ProxyPool([ONE], clock=clock, limits=Limits(domain_rate=1.0)) as pool:
        async with pool.lease(domain="a.example"):
            pass
        async with pool.lease(domain="b.example"):
            pass
        with pytest.raises(NoProxyAvailable, match="for domain 'a.example'"):
            async with pool.lease(domain="a.example", timeout=0):
                pass
        clock.now += 1.0
        async with pool.lease(domain="a.example"):
            pass


async def test_concurrency_per_proxy_and_per_domain() -> None:
    async with ProxyPool([ONE], limits=Limits(concurrency=2, domain_concurrency=1)) as pool:
        async with pool.lease(domain="a.example"):
            with pytest.raises(NoProxyAvailable):
                async with pool.lease(domain="a.example", timeout=0):
                    pass
            async with pool.lease(domain="b.example"):
                with pytest.raises(NoProxyAvailable, match=r"1 limited \(2 leases held\)"):
                    async with pool.lease(domain="c.example", timeout=0):
                        pass
        assert pool.stats().leased == 0


async def test_waiting_lease_is_woken_by_a_release() -> None:
    order: list[str] = []
    async with ProxyPool([ONE], limits=Limits(concurrency=1)) as pool:

        async def second() -> None:
            async with pool.lease(timeout=10) as lease:
                order.append(f"second got {lease.proxy.host}")

        async with anyio.create_task_group() as tg:
            async with pool.lease():
                tg.start_soon(second)
                for _ in range(50):  # let the second lease wait a while: it must not spin
                    await anyio.lowlevel.checkpoint()
                order.append("first released")
        assert order == ["first released", "second got 10.0.0.1"]
        assert pool.stats().waits == 1  # one wait, one wake-up: no busy loop


async def test_waiting_lease_is_woken_when_the_cooldown_ends() -> None:
    async with ProxyPool([ONE], cooldown=0.05) as pool:  # the real clock
        [proxy] = pool.proxies
        await pool.report(proxy, Outcome(ok=False, status=403))
        async with pool.lease(timeout=10) as lease:
            assert lease.proxy == proxy
        assert 1 <= pool.stats().waits <= 2  # a timer to the cooldown's end, not polling


async def test_timeout_raises_no_proxy_available_naming_the_counts() -> None:
    urls = ("http://10.0.0.1:8080", "http://10.0.0.2:8080", "http://10.0.0.3:8080")
    async with ProxyPool([StaticSource(urls)], limits=Limits(concurrency=1), cooldown=60) as pool:
        first, second, third = pool.proxies
        await pool.report(first, Outcome(ok=False, status=429))
        await pool.report(second, Outcome(ok=False, error="ConnectTimeout"))
        async with pool.lease():
            with pytest.raises(NoProxyAvailable) as caught:
                async with pool.lease(timeout=0.05):
                    pass
    assert str(caught.value) == (
        "no proxy available at tier 0 after waiting 0.05 s: 3 proxies in the pool, 2 cooling down, "
        "1 limited (1 leases held), 0 evicted, 0 expired"
    )
    assert caught.value.stats.waits >= 1


def domain_slots(pool: ProxyPool) -> int:
    """How many per-(proxy, domain) slots the pool holds (its private map)."""
    return sum(len(entry.domains) for entry in pool._roster.all)


async def test_idle_domain_slots_are_dropped_when_their_lease_ends(clock: Clock) -> None:
    async with ProxyPool([ONE], clock=clock, limits=Limits(domain_concurrency=1)) as pool:
        for i in range(1_000):
            async with pool.lease(domain=f"site-{i}.example"):
                assert domain_slots(pool) == 1
        assert domain_slots(pool) == 0


async def test_domain_slots_stay_bounded_over_many_domains_and_keep_their_rate(clock: Clock) -> None:
    limits = Limits(domain_rate=10.0, domain_concurrency=2)
    async with ProxyPool([ONE], clock=clock, limits=limits) as pool:
        sizes = []
        for i in range(5_000):
            async with pool.lease(domain=f"site-{i}.example"):
                pass  # given back at once: the slot's rate spacing (0.1 s) keeps it a while
            sizes.append(domain_slots(pool))
            clock.now += 0.01
        assert max(sizes) <= 64
        with pytest.raises(NoProxyAvailable):  # 0.01 s after its last lease: its rate still holds
            async with pool.lease(domain="site-4999.example", timeout=0):
                pass


async def test_a_held_domain_slot_is_never_dropped(clock: Clock) -> None:
    async with ProxyPool([ONE], clock=clock, limits=Limits(domain_concurrency=1)) as pool:
        async with pool.lease(domain="held.example"):
            for i in range(200):
                async with pool.lease(domain=f"site-{i}.example"):
                    pass
            with pytest.raises(NoProxyAvailable):
                async with pool.lease(domain="held.example", timeout=0):
                    pass
