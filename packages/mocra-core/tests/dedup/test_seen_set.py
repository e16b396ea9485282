"""The `SeenSet` contract, run over every implementation."""

from __future__ import annotations

import hashlib
import os
import socket
import uuid
from typing import TYPE_CHECKING

import anyio
import pytest
import redis.asyncio

from mocra_cluster import ClusterConfig, LocalControlPlane, RaftControlPlane
from mocra_core.dedup import (
    ClusterSeenSet,
    LmdbSeenSet,
    MemoryBloomSeenSet,
    MemorySeenSet,
    RedisBloomSeenSet,
    RedisSeenSet,
    SeenSet,
)

if TYPE_CHECKING:
    import pathlib
    from collections.abc import AsyncIterator


def fp(n: int) -> bytes:
    return hashlib.blake2b(str(n).encode(), digest_size=16).digest()


REDIS_URL = os.environ.get("MOCRA_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


# The approximate sets (Bloom filters) pass the same tests: at their default capacity the few thousand
# fingerprints here fill them too little for a false positive (each test's chance of one: < 1e-9).
KINDS = ["memory", "lmdb", "redis", "cluster-local", "cluster-raft", "memory-bloom", "redis-bloom"]


@pytest.fixture(params=KINDS)
async def seen(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> AsyncIterator[SeenSet]:
    if request.param == "cluster-local":
        async with LocalControlPlane(tmp_path / "plane", sync=False) as local:
            yield ClusterSeenSet(local, key="job/seen")
        return
    if request.param == "cluster-raft":
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            addr = f"127.0.0.1:{probe.getsockname()[1]}"
        config = ClusterConfig.bootstrap("solo", addr, tmp_path / "raft", password="test")
        async with RaftControlPlane(config) as raft:
            with anyio.fail_after(10):
                await raft.wait_ready()
            yield ClusterSeenSet(raft, key="job/seen")
        return
    if request.param.startswith("redis"):
        namespace = f"mocra-test-{uuid.uuid4().hex}"  # fresh per test, dropped after it
        kind = RedisBloomSeenSet if request.param == "redis-bloom" else RedisSeenSet
        async with kind(REDIS_URL, namespace=namespace) as redis_store:
            yield redis_store
        async with redis.asyncio.Redis.from_url(REDIS_URL) as raw:
            await raw.delete(f"{namespace}:seen", f"{namespace}:seen:0:0", f"{namespace}:seen:0:1")
        return
    store: SeenSet
    if request.param == "memory-bloom":
        store = MemoryBloomSeenSet()
    else:
        store = MemorySeenSet() if request.param == "memory" else LmdbSeenSet(tmp_path / "seen")
    async with store:
        yield store


@pytest.mark.anyio
async def test_new_fingerprints_are_true_and_seen_ones_false(seen: SeenSet) -> None:
    assert await seen.add_if_absent([fp(1), fp(2)]) == [True, True]
    assert await seen.add_if_absent([fp(2), fp(3), fp(1)]) == [False, True, False]
    assert await seen.count() == 3


@pytest.mark.anyio
async def test_only_the_first_duplicate_in_a_batch_is_new(seen: SeenSet) -> None:
    assert await seen.add_if_absent([fp(1), fp(1), fp(2), fp(1), fp(2)]) == [True, False, True, False, False]
    assert await seen.count() == 2


@pytest.mark.anyio
async def test_empty_batch(seen: SeenSet) -> None:
    assert await seen.add_if_absent([]) == []
    assert await seen.count() == 0


@pytest.mark.anyio
async def test_contains_does_not_add(seen: SeenSet) -> None:
    assert not await seen.contains(fp(1))
    assert await seen.count() == 0
    await seen.add_if_absent([fp(1)])
    assert await seen.contains(fp(1))
    assert not await seen.contains(fp(2))


@pytest.mark.anyio
async def test_many_fingerprints_across_growth(seen: SeenSet) -> None:
    prints = [fp(n) for n in range(20_000)]
    for start in range(0, len(prints), 1_500):
        assert await seen.add_if_absent(prints[start : start + 1_500]) == [True] * len(
            prints[start : start + 1_500]
        )
    assert await seen.count() == 20_000
    assert await seen.add_if_absent(prints[::7]) == [False] * len(prints[::7])
    assert all([await seen.contains(p) for p in prints[::997]])
    assert not await seen.contains(fp(-1))


@pytest.mark.anyio
async def test_fingerprints_with_zero_prefix(seen: SeenSet) -> None:
    zero, other = bytes(16), bytes(8) + b"\x01" * 8
    assert await seen.add_if_absent([zero]) == [True]
    assert await seen.contains(zero)
    assert await seen.add_if_absent([zero]) == [False]
    assert await seen.count() == 1
    assert other != zero


@pytest.mark.anyio
async def test_wrong_length_is_rejected_and_nothing_added(seen: SeenSet) -> None:
    with pytest.raises(ValueError, match="16-byte fingerprints, got 3 bytes"):
        await seen.add_if_absent([fp(1), b"abc"])
    assert await seen.count() == 0
    with pytest.raises(ValueError, match="16-byte"):
        await seen.contains(b"")


@pytest.mark.anyio
async def test_concurrent_batches_agree(seen: SeenSet) -> None:
    results: list[list[bool]] = []

    async def add(offset: int) -> None:
        results.append(await seen.add_if_absent([fp(n) for n in range(offset, offset + 2_000)]))

    async with anyio.create_task_group() as tg:
        for offset in range(0, 8_000, 1_000):  # every fingerprint is offered twice, by neighbours
            tg.start_soon(add, offset)
    assert sum(sum(r) for r in results) == await seen.count() == 9_000


@pytest.mark.anyio
async def test_aclose_twice_is_harmless(seen: SeenSet) -> None:
    await seen.add_if_absent([fp(1)])
    await seen.aclose()
    await seen.aclose()
