"""A run's coordination store, seen set and gate on one Redis server share a client; the queue has its own."""

from __future__ import annotations

import os
import uuid

import pytest
import redis.asyncio

from mocra_core.backends.redis._clients import RedisClients
from mocra_core.config import Settings
from mocra_core.dedup import RedisSeenSet
from mocra_core.engine._backends import open_backends
from mocra_core.engine._plan import BackendPlan

pytestmark = pytest.mark.anyio

REDIS_URL = os.environ.get("MOCRA_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


async def connections() -> int:
    async with redis.asyncio.Redis.from_url(REDIS_URL) as raw:
        return int((await raw.info("clients"))["connected_clients"])


async def test_a_run_opens_one_client_per_server_for_coordination_seen_set_and_gate() -> None:
    job = f"test-{uuid.uuid4().hex}"
    plan = BackendPlan.decide(Settings.from_mapping({"queue": {"url": REDIS_URL}}), job=job)
    before = await connections()
    async with open_backends(plan) as backends:
        stores = [backends.coordination, backends.seen, backends.gate]
        clients = {id(store._redis) for store in stores}  # type: ignore[union-attr]
        assert len(clients) == 1
        await backends.coordination.incr("n")
        assert await backends.seen.add_if_absent([b"x" * 16]) == [True]  # type: ignore[union-attr]
        # one connection for the three stores (each used once, in turn), one for the queue's ping
        assert await connections() - before == 2
    assert await connections() == before  # the run closed the shared client and the queue's
    async with redis.asyncio.Redis.from_url(REDIS_URL) as raw:
        keys = await raw.keys(f"{plan.namespace}:*")
        if keys:
            await raw.delete(*keys)


async def test_a_store_leaves_a_lent_client_open() -> None:
    namespace = f"test-{uuid.uuid4().hex}"
    clients = RedisClients()
    client = clients.get(REDIS_URL)
    async with RedisSeenSet(REDIS_URL, namespace=namespace, client=client) as seen:
        await seen.add_if_absent([b"y" * 16])
    assert await client.delete(f"{namespace}:seen") == 1  # still open after the seen set closed
    await clients.aclose()
