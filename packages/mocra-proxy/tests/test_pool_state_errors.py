"""A failing shared state (Redis down) neither crashes the pool nor fails a lease: the pool keeps its view."""

from __future__ import annotations

import logging
import socket

import pytest

from mocra_proxy import ProxyPool, RedisState, StateError, StaticSource

pytestmark = pytest.mark.anyio


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_redis_down_raises_state_error_naming_the_store_without_credentials() -> None:
    port = closed_port()
    async with RedisState(f"redis://:s3cret@127.0.0.1:{port}/0", namespace="down") as state:
        with pytest.raises(StateError) as caught:
            await state.load(["http://10.0.0.1:8080"], ["shop.example"])
    assert caught.value.store == f"redis://127.0.0.1:{port}/0"
    assert "s3cret" not in str(caught.value) and caught.value.store in str(caught.value)


async def test_pool_keeps_its_own_view_while_the_state_is_down(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mocra_proxy")
    url = f"redis://:s3cret@127.0.0.1:{closed_port()}/0"
    source = StaticSource(["http://10.0.0.1:8080", "http://10.0.0.2:8080"])
    async with RedisState(url, namespace="down") as state:
        async with ProxyPool([source], state=state, cooldown=60) as pool:
            async with pool.lease(domain="shop.example") as lease:
                await lease.failed(403)  # the save fails; the pool still cools the proxy down
            banned = lease.proxy
            await pool.sync()  # the read fails; the pool keeps its records
            for _ in range(3):
                async with pool.lease(domain="shop.example") as lease:
                    assert lease.proxy != banned
                    await lease.ok()
            health = pool.health(banned)
            assert health is not None and health.cooldowns == 1
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "pool state" in r.getMessage()]
    assert len(warnings) == 1  # said once per outage, not once per call
    assert "s3cret" not in caplog.text
