"""What `RedisCoordination` adds to the conformance suite: several clients, failures, Redis-side expiry."""

from __future__ import annotations

import os
import sys
import uuid
from typing import TYPE_CHECKING

import anyio
import pytest
import redis.asyncio

import mocra_core.coordination
from mocra_core._errors import BackendUnavailable, MissingExtra
from mocra_core.backends.redis._coordination import BACKSTOP_GRACE
from mocra_core.coordination import CoordinationError, RedisCoordination

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from conftest import FakeClock

pytestmark = pytest.mark.anyio

REDIS_URL = os.environ.get("MOCRA_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
UNREACHABLE = "redis://worker:s3cret@127.0.0.1:1/0"  # nothing listens on port 1


@pytest.fixture
async def raw() -> AsyncIterator[redis.asyncio.Redis]:
    """A plain client, to look at what the backend stored."""
    async with redis.asyncio.Redis.from_url(REDIS_URL) as client:
        yield client


@pytest.fixture
async def namespace(raw: redis.asyncio.Redis) -> AsyncIterator[str]:
    """A fresh namespace, deleted after the test (with any namespace it prefixes)."""
    name = f"mocra-test-{uuid.uuid4().hex}"
    yield name
    if keys := [key async for key in raw.scan_iter(match=f"{name}*")]:
        await raw.delete(*keys)


async def test_an_unreachable_server_fails_at_start_naming_the_redacted_url() -> None:
    with pytest.raises(BackendUnavailable) as caught:
        async with RedisCoordination(UNREACHABLE):
            pass
    assert caught.value.url == "redis://worker:***@127.0.0.1:1/0"
    assert "127.0.0.1:1" in str(caught.value) and "s3cret" not in str(caught.value)

    shared = RedisCoordination(UNREACHABLE)  # not entered: the first call fails the same way
    with pytest.raises(BackendUnavailable, match=r"\*\*\*"):
        await shared.set_if_absent("gate")
    await shared.aclose()
    assert "s3cret" not in repr(shared)


async def test_calls_after_aclose_fail(namespace: str) -> None:
    shared = RedisCoordination(REDIS_URL, namespace=namespace)
    async with shared:
        await shared.set("k", b"v")
    await shared.aclose()  # twice: harmless
    for call in (shared.get("k"), shared.set_if_absent("k"), shared.incr("n"), shared.is_leader()):
        with pytest.raises(CoordinationError, match="closed"):
            await call


async def test_two_workers_race_for_one_gate(namespace: str) -> None:
    start = anyio.Event()
    winners: list[tuple[int, int]] = []

    async def contender(shared: RedisCoordination, worker: int, i: int) -> None:
        await start.wait()
        if await shared.set_if_absent("seed-once", f"{worker}/{i}".encode(), ttl=60):
            winners.append((worker, i))

    async with (
        RedisCoordination(REDIS_URL, namespace=namespace) as first,
        RedisCoordination(REDIS_URL, namespace=namespace) as second,
    ):
        async with anyio.create_task_group() as tg:
            for worker, shared in enumerate((first, second)):
                for i in range(50):
                    tg.start_soon(contender, shared, worker, i)
            await anyio.wait_all_tasks_blocked()
            start.set()
        assert len(winners) == 1
        worker, i = winners[0]
        assert await first.get("seed-once") == await second.get("seed-once") == f"{worker}/{i}".encode()


async def test_workers_share_values_counters_and_fencing(namespace: str) -> None:
    async with (
        RedisCoordination(REDIS_URL, namespace=namespace) as first,
        RedisCoordination(REDIS_URL, namespace=namespace) as second,
        RedisCoordination(REDIS_URL, namespace=f"{namespace}-other") as other_job,
    ):
        await first.incr("pages", 2)
        assert await second.incr("pages", 3) == 5
        assert await other_job.get("pages") is None  # namespaces keep jobs apart
        token = await first.acquire_lock("login", "a", ttl=30)
        assert token is not None and await second.acquire_lock("login", "b", ttl=30) is None
        assert await second.release_lock("login", "a", token)
        later = await second.acquire_lock("login", "b", ttl=30)
        assert later is not None and later > token


async def test_leadership_passes_when_the_leader_closes_or_stops_renewing(
    namespace: str, clock: FakeClock
) -> None:
    def worker(name: str) -> RedisCoordination:
        return RedisCoordination(REDIS_URL, namespace=namespace, clock=clock, holder_id=name, leader_ttl=10)

    async with worker("a") as a, worker("b") as b, worker("c") as c:
        assert await a.is_leader() and not await b.is_leader()
        clock.advance(6)  # under half the lease left: renewed, so it lasts 10 s from now
        assert await a.is_leader()
        clock.advance(9)
        assert not await b.is_leader()
        await a.aclose()  # gives leadership up at once
        assert await b.is_leader() and not await c.is_leader()
        holder = await c.lock_holder("__leader__")
        assert holder is not None and holder.holder == "b"
        clock.advance(10)  # b stopped calling: its lease lapsed
        assert await c.is_leader() and not await b.is_leader()


async def test_real_clock_values_get_a_redis_backstop(namespace: str, raw: redis.asyncio.Redis) -> None:
    async with RedisCoordination(REDIS_URL, namespace=namespace) as shared:
        await shared.set("gate", b"1", ttl=0.05)
        await shared.set("forever", b"1")
        await shared.incr("window")
        await shared.set_if_absent("window-2", b"5", ttl=60)
        await shared.incr("window-2")  # keeps value and backstop expiry
        token = await shared.acquire_lock("job", "a", ttl=60)
        assert token is not None
        limit = (60 + BACKSTOP_GRACE) * 1000
        assert 0 < await raw.pttl(f"{namespace}:v:gate") <= (0.05 + BACKSTOP_GRACE) * 1000
        assert 60_000 < await raw.pttl(f"{namespace}:v:window-2") <= limit
        assert await raw.pttl(f"{namespace}:v:forever") == await raw.pttl(f"{namespace}:v:window") == -1
        assert await raw.pttl(f"{namespace}:l:job") == -1  # lock grants stay until taken over
        await anyio.sleep(0.06)
        assert await shared.get("gate") is None  # logically expired on the client's clock
        await shared.set("gate", b"2")  # without ttl: the backstop goes too
        assert await raw.pttl(f"{namespace}:v:gate") == -1


async def test_an_injected_clock_sets_no_backstop(
    namespace: str, raw: redis.asyncio.Redis, clock: FakeClock
) -> None:
    async with RedisCoordination(REDIS_URL, namespace=namespace, clock=clock) as shared:
        await shared.set("gate", b"1", ttl=1)
        assert await raw.pttl(f"{namespace}:v:gate") == -1  # Redis's timer would not follow the fake clock
        clock.advance(1)
        assert await shared.get("gate") is None


async def test_without_the_extra_the_name_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in sys.modules if name.partition(".")[0] == "redis"]:
        monkeypatch.setitem(sys.modules, name, None)  # type: ignore[arg-type]  # as if not installed
    monkeypatch.delitem(sys.modules, "mocra_core.backends.redis._coordination")
    monkeypatch.delitem(sys.modules, "mocra_core.backends.redis._connection")
    monkeypatch.delattr(mocra_core.coordination, "RedisCoordination")
    with pytest.raises(MissingExtra, match=r"pip install 'mocra\[redis\]'") as caught:
        mocra_core.coordination.RedisCoordination  # noqa: B018
    assert caught.value.extra == "redis"
    with pytest.raises(AttributeError):
        mocra_core.coordination.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018
