"""Health: cooldown with backoff and return, eviction and refill, expiry, what a lease reports on exit."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio
import pytest

from mocra_proxy import NoProxyAvailable, Outcome, Proxy, ProxyPool, RoundRobinPolicy

if TYPE_CHECKING:
    from conftest import Clock


pytestmark = pytest.mark.anyio


class BatchSource:
    """Gives its proxies in batches: each fetch the next batch (then the last one again)."""

    name, weight = "batches", 1.0

    def __init__(self, *batches: list[str], expires_at: float | None = None) -> None:
        self.batches = [[Proxy.parse(u, expires_at=expires_at) for u in b] for b in batches]
        self.fetches = 0

    async def fetch(self) -> list[Proxy]:
        batch = self.batches[min(self.fetches, len(self.batches) - 1)]
        self.fetches += 1
        return batch


A, B = "http://u:secret@10.0.0.1:8080", "http://10.0.0.2:8080"


async def test_ban_status_cools_down_with_backoff_and_comes_back(clock: Clock) -> None:
    pool = ProxyPool(
        [BatchSource([A, B])], clock=clock, cooldown=2.0, max_cooldown=5.0, policy=RoundRobinPolicy()
    )
    async with pool:
        a = next(p for p in pool.proxies if p.host == "10.0.0.1")
        lengths = []
        for _ in range(4):
            await pool.report(a, Outcome(ok=False, status=429))
            health = pool.health(a)
            assert health is not None
            lengths.append(health.cooldown_until - clock.now)
        assert lengths == [2.0, 4.0, 5.0, 5.0]  # cooldown * 2**(n-1), capped
        for _ in range(3):
            async with pool.lease() as lease:
                assert lease.proxy.host == "10.0.0.2"
        clock.now += 5.0
        hosts = set()
        for _ in range(4):
            async with pool.lease() as lease:
                hosts.add(lease.proxy.host)
                await lease.ok()
            clock.now += 1.0
        assert hosts == {"10.0.0.1", "10.0.0.2"}
        health = pool.health(a)
        assert health is not None and (health.cooldowns, health.consecutive_errors) == (0, 0)


async def test_connect_error_cools_down_other_failures_only_count(clock: Clock) -> None:
    async with ProxyPool([BatchSource([A])], clock=clock, max_errors=10) as pool:
        [a] = pool.proxies
        await pool.report(a, Outcome(ok=False, status=500))
        health = pool.health(a)
        assert health is not None and health.cooldown_until == 0.0 and health.failures == 1
        await pool.report(a, Outcome(ok=False, error="ConnectError"))
        assert health.cooldown_until == clock.now + 1.0


async def test_max_errors_evicts_and_the_pool_refills_from_its_source(clock: Clock) -> None:
    source = BatchSource([A], [A, B])
    async with ProxyPool([source], clock=clock, max_errors=3, cooldown=0.001) as pool:
        [a] = pool.proxies
        for _ in range(3):
            await pool.report(a, Outcome(ok=False, error="ConnectError"))
        assert pool.proxies == [] or pool.proxies == [Proxy.parse(B)]
        async with pool.lease(timeout=5) as lease:  # waits for the refill
            assert lease.proxy.host == "10.0.0.2"
        assert source.fetches == 2
        assert pool.proxies == [Proxy.parse(B)]  # the evicted proxy is not taken back
        assert pool.stats().evicted == 1


async def test_expired_proxies_are_never_leased_and_are_dropped(clock: Clock) -> None:
    async with ProxyPool([BatchSource([A, B], expires_at=1_010.0)], clock=clock) as pool:
        async with pool.lease() as lease:
            assert lease.proxy.expires_at == 1_010.0
        clock.now = 1_010.0
        with pytest.raises(NoProxyAvailable, match="0 proxies in the pool.* 2 expired"):
            async with pool.lease(timeout=0):
                pass
        assert pool.proxies == []


async def test_expired_proxies_are_not_loaded(clock: Clock) -> None:
    async with ProxyPool([BatchSource([A], expires_at=10.0)], clock=clock) as pool:
        assert pool.proxies == []


async def test_escaping_exception_is_reported_as_a_failure_by_class_name(clock: Clock) -> None:
    async with ProxyPool([BatchSource([A, B])], clock=clock, policy=RoundRobinPolicy()) as pool:
        with pytest.raises(ConnectionResetError):
            async with pool.lease() as lease:
                raise ConnectionResetError("reset by peer")
        health = pool.health(lease.proxy)
        assert health is not None and health.failures == 1 and health.cooldown_until > clock.now
        assert lease.reported


async def test_no_report_and_no_exception_leaves_the_record_alone(clock: Clock) -> None:
    async with ProxyPool([BatchSource([A])], clock=clock) as pool:
        async with pool.lease() as lease:
            pass
        health = pool.health(lease.proxy)
        assert health is not None and (health.successes, health.failures) == (0, 0)
        assert not lease.reported
        assert pool.stats().leased == 0


async def test_cancellation_is_not_blamed_on_the_proxy(clock: Clock) -> None:
    async with ProxyPool([BatchSource([A])], clock=clock) as pool:
        with anyio.move_on_after(0.01):
            async with pool.lease() as lease:
                await anyio.sleep(5)
        health = pool.health(lease.proxy)
        assert health is not None and health.failures == 0
        assert pool.stats().leased == 0


async def test_explicit_report_wins_over_the_exception_and_counts_once(clock: Clock) -> None:
    async with ProxyPool([BatchSource([A])], clock=clock, max_errors=10) as pool:
        with pytest.raises(ValueError, match="parse"):
            async with pool.lease() as lease:
                await lease.ok(200, latency=0.25)
                await lease.failed(403)  # a second report is ignored
                raise ValueError("parse failed after the download")
        health = pool.health(lease.proxy)
        assert health is not None
        assert (health.successes, health.failures, health.latency) == (1, 0, 0.25)


async def test_credentials_stay_out_of_reprs_logs_and_errors(
    caplog: pytest.LogCaptureFixture, clock: Clock
) -> None:
    caplog.set_level(logging.DEBUG, logger="mocra_proxy")
    async with ProxyPool([BatchSource([A])], clock=clock, max_errors=2) as pool:
        async with pool.lease() as lease:
            assert "secret" not in repr(lease) and "secret" not in repr(pool)
            await lease.failed(403)
        with pytest.raises(NoProxyAvailable) as caught:
            async with pool.lease(domain="example.com", timeout=0):
                pass
        await pool.report(lease.proxy, Outcome(ok=False, error="ConnectError"))  # evicted
    assert str(caught.value) == (
        "no proxy available for domain 'example.com' at tier 0 after waiting 0 s: 1 proxies in the pool, "
        "1 cooling down, 0 limited (0 leases held), 0 evicted, 0 expired"
    )
    assert "cools down" in caplog.text and "evicted" in caplog.text
    assert "secret" not in caplog.text
