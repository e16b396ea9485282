"""Tunnel sessions in a pool: an evicted session is replaced by a new session id, in every pool sharing it."""

from __future__ import annotations

import anyio
import pytest

from mocra_proxy import MemoryState, ProxyPool, TunnelSource

pytestmark = pytest.mark.anyio

GATEWAY = "http://cust:pw@gw.example.net:22225"


async def sessions_become(pool: ProxyPool, expected: set[str]) -> None:
    """Wait (up to 2 s, woken every 10 ms) until the pool's proxies are those sessions."""
    with anyio.fail_after(2):
        while {p.session for p in pool.proxies} != expected:  # noqa: ASYNC110 - the pool's upkeep refills
            await anyio.sleep(0.01)


async def test_an_evicted_session_comes_back_as_a_new_session_id() -> None:
    source = TunnelSource(GATEWAY, sessions=2, session_prefix="job")
    async with ProxyPool([source], max_errors=1) as pool:
        async with pool.lease(key="alice") as lease:
            assert lease.proxy.session == "job0"
            await lease.failed(error="ConnectError")  # evicts job0
        await sessions_become(pool, {"job1", "job2"})
        [new] = [p for p in pool.proxies if p.session == "job2"]
        assert new.username == "cust-session-job2" and new.password == "pw"
        assert pool.stats().evicted == 1
    assert [p.session for p in await source.fetch()] == ["job2", "job1"]


async def test_the_replacement_session_is_evicted_in_turn() -> None:
    source = TunnelSource(GATEWAY, sessions=2, session_prefix="job")
    [job0, job1] = await source.fetch()
    source.evicted(job0)
    [job2, _] = await source.fetch()
    source.evicted(job2)
    source.evicted(job0)  # no longer given: nothing to replace
    assert [p.session for p in await source.fetch()] == ["job4", "job1"]
    gateway = TunnelSource(GATEWAY)
    [only] = await gateway.fetch()
    gateway.evicted(only)
    assert await gateway.fetch() == (only,)


async def test_pools_sharing_state_move_to_the_same_new_session() -> None:
    state = MemoryState()
    first_source = TunnelSource(GATEWAY, sessions=2, session_prefix="job")
    second_source = TunnelSource(GATEWAY, sessions=2, session_prefix="job")
    async with (
        ProxyPool([first_source], max_errors=1, state=state) as first,
        ProxyPool([second_source], max_errors=1, state=state) as second,
    ):
        [job0] = [p for p in first.proxies if p.session == "job0"]
        async with first.lease(key="k") as lease:
            assert lease.proxy == job0
            await lease.failed(407)
        await second.sync()  # sees job0 evicted by `first`
        await sessions_become(first, {"job1", "job2"})
        await sessions_become(second, {"job1", "job2"})
