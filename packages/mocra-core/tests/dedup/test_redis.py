"""What `RedisSeenSet` adds to the shared seen-set tests: several clients, failures, the missing extra."""

from __future__ import annotations

import hashlib
import os
import sys
import uuid
from typing import TYPE_CHECKING

import anyio
import pytest
import redis.asyncio

import mocra_core.dedup
from mocra_core._errors import BackendUnavailable, MissingExtra
from mocra_core.dedup import RedisSeenSet, SeenSetError

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.anyio

REDIS_URL = os.environ.get("MOCRA_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def fp(n: int) -> bytes:
    return hashlib.blake2b(str(n).encode(), digest_size=16).digest()


@pytest.fixture
async def namespace() -> AsyncIterator[str]:
    """A fresh namespace, deleted after the test."""
    name = f"mocra-test-{uuid.uuid4().hex}"
    yield name
    async with redis.asyncio.Redis.from_url(REDIS_URL) as raw:
        await raw.delete(f"{name}:seen", f"{name}:other")


async def test_an_unreachable_server_fails_at_start_naming_the_redacted_url() -> None:
    with pytest.raises(BackendUnavailable, match=r"redis://:\*\*\*@127\.0\.0\.1:1/0") as caught:
        async with RedisSeenSet("redis://:s3cret@127.0.0.1:1/0"):
            pass
    assert "s3cret" not in str(caught.value)
    seen = RedisSeenSet("redis://:s3cret@127.0.0.1:1/0")  # not entered: the first call fails alike
    with pytest.raises(BackendUnavailable):
        await seen.add_if_absent([fp(1)])
    await seen.aclose()
    assert "s3cret" not in repr(seen)


async def test_workers_on_one_key_dedup_together(namespace: str) -> None:
    results: list[list[bool]] = []

    async def add(seen: RedisSeenSet, offset: int) -> None:
        results.append(await seen.add_if_absent([fp(n) for n in range(offset, offset + 500)]))

    async with (
        RedisSeenSet(REDIS_URL, namespace=namespace) as first,
        RedisSeenSet(REDIS_URL, namespace=namespace) as second,
        RedisSeenSet(REDIS_URL, namespace=namespace, key="other") as other,
    ):
        async with anyio.create_task_group() as tg:
            for offset in range(0, 2_000, 250):  # each fingerprint offered by both workers
                tg.start_soon(add, first, offset)
                tg.start_soon(add, second, offset)
        assert sum(map(sum, results)) == await first.count() == await second.count() == 2_250
        assert await other.count() == 0 and not await other.contains(fp(1))


async def test_calls_after_aclose_fail(namespace: str) -> None:
    seen = RedisSeenSet(REDIS_URL, namespace=namespace)
    async with seen:
        await seen.add_if_absent([fp(1)])
    with pytest.raises(SeenSetError, match="closed"):
        await seen.add_if_absent([fp(2)])
    with pytest.raises(SeenSetError, match="closed"):
        await seen.count()


async def test_without_the_extra_the_name_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in sys.modules if name.partition(".")[0] == "redis"]:
        monkeypatch.setitem(sys.modules, name, None)  # type: ignore[arg-type]  # as if not installed
    monkeypatch.delitem(sys.modules, "mocra_core.backends.redis._seen")
    monkeypatch.delitem(sys.modules, "mocra_core.backends.redis._connection")
    monkeypatch.delattr(mocra_core.dedup, "RedisSeenSet")
    with pytest.raises(MissingExtra, match=r"RedisSeenSet needs: pip install 'mocra\[redis\]'"):
        mocra_core.dedup.RedisSeenSet  # noqa: B018
